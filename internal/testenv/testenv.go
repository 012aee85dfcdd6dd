// Package testenv starts the real servers Conclave's tests run against
// (MinIO now, a Temporal dev server later) on loopback ports, and tears
// them down when the test ends. Binaries come from ./bin, built by
// `make tools` (or `make test`), so tests never download anything; without
// them the tests that need servers skip (see FindBinary).
package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/conclave-ai/conclave/internal/devserver"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// listener is closed before returning, so another process may grab the port
// first; StartMinIO retries on that rare collision.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: find a free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatalf("testenv: release port %d: %v", port, err)
	}
	return port
}

// ModuleRoot returns the directory holding go.mod, found by walking up from
// the working directory (a test's working directory is its package dir).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("testenv: working directory: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("testenv: no go.mod above the working directory; run tests from inside the module")
		}
		dir = parent
	}
}

// FindBinary returns the path of a tool binary the way the dev command
// finds it (devserver.FindTool): $envVar if set, else bin/<file> from the
// module root up, else <file> on PATH. A tool that is not installed skips
// the test, with the fix, so `go test ./...` on a fresh checkout passes; a
// variable naming a missing file fails it, so `make test` (which sets the
// variables) can never pass by skipping. label names the tool ("MinIO").
func FindBinary(t testing.TB, label, envVar, file string) string {
	t.Helper()
	bin, err := devserver.FindTool(ModuleRoot(t), envVar, file, label)
	switch {
	case errors.Is(err, devserver.ErrNotInstalled):
		t.Skipf("testenv: %s not found: run `make test` (installs it into ./bin) or set %s", label, envVar)
	case err != nil:
		t.Fatalf("testenv: %v", err)
	}
	return bin
}

// Process is a server started for a test. Its combined output goes to a
// file that is logged if the test fails, which is usually the only clue
// when a server refuses to start.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
	stop    sync.Once
}

// StartProcess starts cmd with its output captured and registers a cleanup
// that stops it: SIGTERM, then SIGKILL after a grace period.
func StartProcess(t testing.TB, name string, cmd *exec.Cmd) *Process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("testenv: create %s log: %v", name, err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("testenv: start %s (%s): %v", name, cmd.Path, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			p.dumpLog(t)
		}
	})
	return p
}

// Exited reports whether the process has already ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop ends the process and waits for it; calling it again is a no-op.
func (p *Process) Stop() {
	p.stop.Do(func() {
		if exited, _ := p.Exited(); exited {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// Log returns what the process has written so far.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

func (p *Process) dumpLog(t testing.TB) {
	out := p.Log()
	const max = 8 << 10
	if len(out) > max {
		out = "…" + out[len(out)-max:]
	}
	t.Logf("testenv: %s output (%s):\n%s", p.name, p.logPath, strings.TrimSpace(out))
}

// WaitHTTP polls url until it answers 200 OK, the process exits, or the
// timeout passes. It returns an error instead of failing the test so a
// caller can retry with new ports.
func WaitHTTP(p *Process, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		if exited, werr := p.Exited(); exited {
			return fmt.Errorf("%s exited before %s answered (%v)", p.name, url, werr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer %s within %s: %w", p.name, url, timeout, errors.Join(last, ctx.Err()))
		case <-tick.C:
		case <-p.done:
		}
	}
}

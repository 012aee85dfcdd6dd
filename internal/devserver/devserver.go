// Package devserver starts a real Temporal dev server (`temporal server
// start-dev` from the pinned CLI in ./bin) on loopback ports. `conclave dev`,
// `conclave demo`, the benchmarks and the integration tests share it, so
// they all run against the same real server the same way.
package devserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
)

// SearchAttributes are registered on the dev server's namespace so sessions
// can be filtered by phase and winner in the Web UI.
var SearchAttributes = []string{"ConclavePhase=Keyword", "ConclaveWinner=Keyword"}

// Config says how to start the server. Zero ports are chosen free.
type Config struct {
	Binary    string // path to the temporal CLI
	IP        string // default 127.0.0.1
	Port      int    // frontend gRPC
	UIPort    int    // Web UI; ignored when Headless
	Headless  bool
	DBFile    string // empty: state is lost when the server stops
	Namespace string // default "default"
	// Log receives the server's output; nil keeps the last 64 KiB in memory.
	Log *os.File
}

// Server is a running dev server.
type Server struct {
	HostPort  string
	UIURL     string // empty when headless
	Namespace string

	cfg  Config
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
	err  error
}

// FindBinary returns the temporal CLI: $CONCLAVE_TEMPORAL_BIN, else
// bin/temporal under dir or one of its parents, else the PATH.
func FindBinary(dir string) (string, error) {
	if p := os.Getenv("CONCLAVE_TEMPORAL_BIN"); p != "" {
		return p, nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "bin", "temporal")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	return "", errors.New("the Temporal CLI was not found in ./bin or on PATH: run `make tools`")
}

// Start starts the server and waits until it accepts clients.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.IP == "" {
		cfg.IP = "127.0.0.1"
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	var err error
	for _, p := range []*int{&cfg.Port, &cfg.UIPort} {
		if *p == 0 {
			if *p, err = FreePort(cfg.IP); err != nil {
				return nil, err
			}
		}
	}
	httpPort, err := FreePort(cfg.IP)
	if err != nil {
		return nil, err
	}
	metricsPort, err := FreePort(cfg.IP)
	if err != nil {
		return nil, err
	}
	args := []string{"server", "start-dev", "--ip", cfg.IP, "--port", strconv.Itoa(cfg.Port),
		"--http-port", strconv.Itoa(httpPort), "--metrics-port", strconv.Itoa(metricsPort),
		"--namespace", cfg.Namespace, "--log-level", "warn"}
	for _, sa := range SearchAttributes {
		args = append(args, "--search-attribute", sa)
	}
	if cfg.Headless {
		args = append(args, "--headless")
	} else {
		args = append(args, "--ui-ip", cfg.IP, "--ui-port", strconv.Itoa(cfg.UIPort))
	}
	if cfg.DBFile != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.DBFile), 0o755); err != nil {
			return nil, err
		}
		args = append(args, "--db-filename", cfg.DBFile)
	}
	s := &Server{HostPort: net.JoinHostPort(cfg.IP, strconv.Itoa(cfg.Port)), Namespace: cfg.Namespace, cfg: cfg,
		out: &tailBuffer{max: 64 << 10}, done: make(chan struct{})}
	if !cfg.Headless {
		s.UIURL = "http://" + net.JoinHostPort(cfg.IP, strconv.Itoa(cfg.UIPort))
	}
	s.cmd = exec.Command(cfg.Binary, args...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cfg.Log != nil {
		s.cmd.Stdout, s.cmd.Stderr = cfg.Log, cfg.Log
	} else {
		s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Binary, err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	if err := s.wait(ctx, 90*time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// wait polls until a client can describe the namespace: the server is up
// and the namespace (with its search attributes) exists.
func (s *Server) wait(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-s.done:
			return fmt.Errorf("temporal dev server exited early (%v): %s", s.err, s.out.String())
		default:
		}
		c, err := client.Dial(client.Options{HostPort: s.HostPort, Namespace: s.Namespace, Logger: nopLogger{}})
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = c.WorkflowService().DescribeNamespace(cctx, describeNS(s.Namespace))
			cancel()
			c.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("temporal dev server at %s not ready after %s: %v; output: %s", s.HostPort, limit, err, s.out.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop ends the server: SIGTERM to its process group, SIGKILL after 10s.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	pgid := -s.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-s.done
	}
}

// Restart stops the server and starts it again on the same ports and
// database file, as an operator restarting a server would.
func (s *Server) Restart(ctx context.Context) error {
	s.Stop()
	n, err := Start(ctx, s.cfg)
	if err != nil {
		return err
	}
	*s = *n
	return nil
}

// Output is the server's recent output (when no Log file was given).
func (s *Server) Output() string { return s.out.String() }

// FreePort asks the kernel for a free TCP port on ip.
func FreePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

package mcp

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// process is a stdio server's process. It runs in its own process group,
// which stop kills whole (npx starts node, which may start more), and on
// Linux it is killed when the worker dies, however it dies (procAttr).
type process struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   io.ReadCloser
	done     chan struct{}
	mu       sync.Mutex
	stderr   []string // its last lines, for errors
	waitErr  error
	stopOnce sync.Once
}

// SelfCommand is the command name that runs this very binary: a server
// entry `command: conclave` starts the worker's own executable, whatever
// PATH holds (the demo's example server).
const SelfCommand = "conclave"

func startProcess(s Server, workspace string, getenv func(string) string, logf func(string, ...any)) (*process, error) {
	name := s.Command
	if name == SelfCommand {
		if self, err := os.Executable(); err == nil {
			name = self
		}
	}
	cmd := exec.Command(name, s.Args...)
	cmd.Env = s.env(getenv)
	cmd.Dir = workspace
	if s.Cwd != "" {
		cmd.Dir = s.Cwd
		if !filepath.IsAbs(s.Cwd) && workspace != "" {
			cmd.Dir = filepath.Join(workspace, s.Cwd)
		}
	}
	cmd.SysProcAttr = procAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Command, err)
	}
	p := &process{cmd: cmd, stdin: stdin, stdout: stdout, done: make(chan struct{})}
	var readers sync.WaitGroup
	readers.Go(func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 4096), 64<<10)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr = append(p.stderr, line)
			if len(p.stderr) > 20 {
				p.stderr = p.stderr[1:]
			}
			p.mu.Unlock()
			logf("MCP server %s: %s", s.Name, line)
		}
		_, _ = io.Copy(io.Discard, stderr)
	})
	go func() {
		readers.Wait() // Wait closes the pipe: read it to the end first
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	case <-time.After(100 * time.Millisecond):
		// A crash closes stdout a moment before the process is reaped.
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
}

func (p *process) exitDetail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	detail := "it exited"
	if p.waitErr != nil {
		detail = p.waitErr.Error()
	}
	if n := len(p.stderr); n > 0 {
		detail += "; its last output: " + p.stderr[n-1]
	}
	return detail
}

func (p *process) lastErr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.stderr, " | ")
}

// stop closes the server's input, gives it a moment to exit, then kills
// its process group, and waits for it.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(500 * time.Millisecond):
		}
		killGroup(p.cmd)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
	})
	// Whatever the server left running in its group goes too.
	killGroup(p.cmd)
}

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
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/conclave-ai/conclave/contract"
)

// BinaryEnv names the variable that overrides where the Temporal CLI is;
// `make test` sets it so tests never pick up some other temporal on PATH.
const BinaryEnv = "CONCLAVE_TEMPORAL_BIN"

// DefaultReadyTimeout bounds the wait for a new server to answer. Generous
// because the dev server migrates its SQLite schema on start, which takes
// tens of seconds on a loaded shared machine.
const DefaultReadyTimeout = 60 * time.Second

// stopGrace is how long a server gets to shut down on SIGTERM before it is
// killed. A clean stop flushes the database file that Restart reopens.
const stopGrace = 10 * time.Second

// searchAttributes are registered on the namespace (all Keyword) so
// sessions can be filtered by phase and winner in the Web UI.
func searchAttributes() []string {
	return []string{contract.SearchAttrPhase, contract.SearchAttrWinner, contract.SearchAttrServeKey}
}

// Config says how to start the server. Zero ports are chosen free.
type Config struct {
	Binary      string // path to the temporal CLI; see FindBinary
	IP          string // address every port binds to; default 127.0.0.1
	Port        int    // frontend gRPC, what clients dial
	HTTPPort    int    // HTTP API
	MetricsPort int    // Prometheus /metrics
	UIPort      int    // Web UI; ignored when Headless
	// Headless turns the Web UI off, which saves memory and a port when
	// nobody will look at it (tests).
	Headless bool
	// DBFile keeps the server's state in a SQLite file, so workflows
	// survive a restart. Empty keeps everything in memory.
	DBFile    string
	Namespace string // default "default"; created at start
	// Log, if set, receives the server's output as it is written. The last
	// 64 KiB are kept in memory either way, for error messages and Output.
	Log io.Writer
	// ReadyTimeout bounds each wait for readiness; default DefaultReadyTimeout.
	ReadyTimeout time.Duration
}

// Server is a running dev server. Its fields stay valid across Restart.
type Server struct {
	HostPort  string // frontend gRPC address for client.Options.HostPort
	UIURL     string // Web UI base URL; empty when headless
	Namespace string
	DBFile    string // empty when state is in memory

	cfg Config // with every port filled in, so Restart reuses them
	out *tailBuffer

	mu   sync.Mutex // guards proc between Stop and Restart
	proc *process
}

// process is one run of the CLI; Restart replaces it.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd.Wait returns
	err  error         // cmd.Wait's result; read only after done
}

// FindBinary returns the Temporal CLI: $CONCLAVE_TEMPORAL_BIN if set, else
// bin/temporal in dir or the nearest parent that has one (the module root
// when run from inside the repository), else temporal on PATH.
func FindBinary(dir string) (string, error) {
	return FindTool(dir, BinaryEnv, "temporal", "the Temporal CLI")
}

// ErrNotInstalled is wrapped by FindTool's error when the tool is simply
// not installed ($envVar unset, no bin/<name>, nothing on PATH), as opposed
// to a variable naming a missing file. Tests skip on the first and fail on
// the second, so a fresh checkout's `go test ./...` passes while a broken
// `make test` setup cannot pass by skipping.
var ErrNotInstalled = errors.New("not installed")

// FindTool finds a tool that `make tools` installs into bin/: $envVar if
// set, else bin/<name> in dir or the nearest parent that has one, else
// <name> on PATH. label names the tool in errors.
func FindTool(dir, envVar, name, label string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			return "", fmt.Errorf("%s was not found at %s (from $%s); run `make tools` or fix the variable", label, p, envVar)
		}
		return p, nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "bin", name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s was not found in ./bin above %s or on PATH (%w); run `make tools` (or set $%s)", label, dir, ErrNotInstalled, envVar)
}

// Start starts the server and returns once a client can describe its
// namespace and see the search attributes, and the Web UI answers unless
// Headless, so callers can use it at once. ctx bounds only the start:
// cancelling it later does not stop the server; Stop does.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Binary == "" {
		return nil, errors.New("devserver: Config.Binary is empty; use FindBinary")
	}
	if cfg.IP == "" {
		cfg.IP = "127.0.0.1"
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.DBFile != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.DBFile), 0o755); err != nil {
			return nil, fmt.Errorf("create the directory for the dev server database: %w", err)
		}
	}
	s := &Server{Namespace: cfg.Namespace, DBFile: cfg.DBFile, out: &tailBuffer{max: 64 << 10}}
	// A free port is released before the server binds it, so another
	// process can take it in between. The CLI then exits at once with
	// "address already in use", and fresh ports fix it. Ports the caller
	// chose are kept: trying others would hide the conflict.
	callerPorts := cfg.Port != 0 && cfg.HTTPPort != 0 && cfg.MetricsPort != 0 && (cfg.Headless || cfg.UIPort != 0)
	for attempt := 1; ; attempt++ {
		c := cfg
		if err := c.fillPorts(); err != nil {
			return nil, err
		}
		s.setConfig(c)
		err := s.start(ctx)
		if err == nil {
			return s, nil
		}
		if callerPorts || attempt == 3 || !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
}

// fillPorts picks a free port for every zero one.
func (c *Config) fillPorts() error {
	ports := []*int{&c.Port, &c.HTTPPort, &c.MetricsPort}
	if !c.Headless {
		ports = append(ports, &c.UIPort)
	}
	for _, p := range ports {
		if *p != 0 {
			continue
		}
		var err error
		if *p, err = FreePort(c.IP); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) setConfig(c Config) {
	s.cfg = c
	s.HostPort = net.JoinHostPort(c.IP, strconv.Itoa(c.Port))
	s.UIURL = ""
	if !c.Headless {
		s.UIURL = "http://" + net.JoinHostPort(c.IP, strconv.Itoa(c.UIPort))
	}
}

// args is the CLI command line for c; every flag exists in CLI v1.5.1.
func (c Config) args() []string {
	args := []string{"server", "start-dev",
		"--ip", c.IP,
		"--port", strconv.Itoa(c.Port),
		"--http-port", strconv.Itoa(c.HTTPPort),
		"--metrics-port", strconv.Itoa(c.MetricsPort),
		"--namespace", c.Namespace,
		"--log-level", "warn",
		// Activities a workflow task schedules go straight back to the
		// worker that completed it, when it has room: no poll round trip
		// before each agent step.
		"--dynamic-config-value", "system.enableActivityEagerExecution=true",
	}
	for _, name := range searchAttributes() {
		args = append(args, "--search-attribute", name+"=Keyword")
	}
	if c.Headless {
		args = append(args, "--headless")
	} else {
		args = append(args, "--ui-ip", c.IP, "--ui-port", strconv.Itoa(c.UIPort))
	}
	if c.DBFile != "" {
		args = append(args, "--db-filename", c.DBFile)
	}
	return args
}

var errPortTaken = errors.New("a port was taken")

// start runs the CLI with s.cfg and waits until it is ready; on failure
// nothing is left running.
func (s *Server) start(ctx context.Context) error {
	cmd := exec.Command(s.cfg.Binary, s.cfg.args()...)
	cmd.SysProcAttr = procAttr()
	var w io.Writer = s.out
	if s.cfg.Log != nil {
		w = io.MultiWriter(s.out, s.cfg.Log)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the Temporal CLI %s: %w", s.cfg.Binary, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	if err := s.waitReady(ctx, p); err != nil {
		s.Stop()
		return err
	}
	return nil
}

// waitReady polls the server until it serves the namespace, the process
// exits, or the ready timeout passes. Polling, not sleeping, keeps a fast
// machine fast and a slow one correct.
func (s *Server) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyTimeout)
	defer cancel()
	// A check against a dead port takes seconds (the SDK retries within
	// its deadline); end it as soon as the process exits so a bad start
	// fails at once.
	checkCtx, cancelCheck := context.WithCancel(ctx)
	defer cancelCheck()
	go func() {
		select {
		case <-p.done:
			cancelCheck()
		case <-checkCtx.Done():
		}
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := s.check(checkCtx)
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			out := s.out.String()
			if strings.Contains(out, "address already in use") {
				return fmt.Errorf("temporal dev server could not bind its ports: %w (%v); output:\n%s", errPortTaken, p.err, tail(out))
			}
			return fmt.Errorf("temporal dev server exited before it was ready (%v); output:\n%s", p.err, tail(out))
		case <-ctx.Done():
			return fmt.Errorf("temporal dev server on %s not ready within %s (%v; last check: %v); raise Config.ReadyTimeout on a loaded machine; output:\n%s",
				s.HostPort, s.cfg.ReadyTimeout, ctx.Err(), err, tail(s.out.String()))
		case <-tick.C:
		}
	}
}

// check succeeds when a client can connect, the namespace exists and the
// search attributes are registered (what the workflows need to run), and
// the Web UI answers if there is one (`conclave dev` prints its URL).
func (s *Server) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort:          s.HostPort,
		Namespace:         s.Namespace,
		Logger:            log.NewStructuredLogger(slog.New(slog.DiscardHandler)),
		ConnectionOptions: client.ConnectionOptions{GetSystemInfoTimeout: 2 * time.Second},
	})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.Namespace}); err != nil {
		return err
	}
	sa, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: s.Namespace})
	if err != nil {
		return err
	}
	for _, name := range searchAttributes() {
		if _, ok := sa.GetCustomAttributes()[name]; !ok {
			return fmt.Errorf("search attribute %s not registered yet", name)
		}
	}
	if s.UIURL == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.UIURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("web UI: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("web UI at %s: %s", s.UIURL, resp.Status)
	}
	return nil
}

// Stop ends the server: SIGTERM to its process group, SIGKILL after 10s,
// then SIGKILL to whatever is left in the group so nothing outlives it.
// It waits for the process to exit; calling it again is a no-op.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return
	}
	s.proc = nil
	select {
	case <-p.done:
	default:
		_ = terminate(p.cmd.Process)
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			_ = kill(p.cmd.Process)
			<-p.done
		}
	}
	_ = kill(p.cmd.Process) // children, if any, share the group
}

// Restart stops the server and starts it again on the same ports and
// database file, as an operator restarting a server would. Without a
// DBFile the new server starts empty. Clients dialed before keep working:
// gRPC reconnects on its own.
func (s *Server) Restart(ctx context.Context) error {
	s.Stop()
	_, _ = fmt.Fprintf(s.out, "\n--- devserver: restarting at %s ---\n", time.Now().Format(time.RFC3339))
	return s.start(ctx)
}

// Output is the server's recent output, including earlier runs.
func (s *Server) Output() string { return s.out.String() }

// FreePort asks the kernel for a free TCP port on ip. The port is released
// before returning, so it is only probably still free when used.
func FreePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", ip, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("release port %d: %w", port, err)
	}
	return port, nil
}

// tail keeps error messages readable: the end of the output has the cause.
func tail(s string) string {
	const max = 4 << 10
	s = strings.TrimSpace(s)
	if len(s) > max {
		return "…" + s[len(s)-max:]
	}
	return s
}

// tailBuffer keeps the last max bytes written; the dev server is chatty
// over a long `conclave dev` session.
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

package testenv

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/conclave-ai/conclave/internal/devserver"
)

// Temporal is a real Temporal dev server started for a test. It is a thin
// testing wrapper over devserver, which `conclave dev` uses too, so tests
// exercise the same start-up path as users.
type Temporal struct {
	HostPort  string // frontend gRPC address, e.g. 127.0.0.1:41234
	UIURL     string // Web UI base URL; empty unless WithUI(true)
	Namespace string // "default"
	DBFile    string // empty unless WithDBFile

	srv *devserver.Server
}

// TemporalOption adjusts StartTemporal.
type TemporalOption func(*devserver.Config)

// WithDBFile keeps the server's state in a SQLite file, so Restart keeps
// workflows (and their histories). Without it a restart starts empty.
func WithDBFile(path string) TemporalOption {
	return func(c *devserver.Config) { c.DBFile = path }
}

// WithUI serves the Web UI and sets UIURL. It is off by default: a test
// rarely looks at it, and on a shared machine it costs memory and a port.
func WithUI(on bool) TemporalOption {
	return func(c *devserver.Config) { c.Headless = !on }
}

// StartTemporal starts `temporal server start-dev` from the pinned CLI
// ($CONCLAVE_TEMPORAL_BIN or <module root>/bin/temporal) on free loopback
// ports, with the default namespace and Conclave's search attributes, and
// returns once a client can use it. The server stops when the test ends;
// if the test failed, its output is logged first.
func StartTemporal(t testing.TB, opts ...TemporalOption) *Temporal {
	t.Helper()
	bin := FindBinary(t, "Temporal CLI", devserver.BinaryEnv, "temporal")
	cfg := devserver.Config{Binary: bin, Headless: true}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := devserver.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	s := &Temporal{HostPort: srv.HostPort, UIURL: srv.UIURL, Namespace: srv.Namespace, DBFile: srv.DBFile, srv: srv}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("testenv: temporal dev server output:\n%s", lastLines(srv.Output(), 16<<10))
		}
	})
	return s
}

// Client dials the server's namespace; the client is closed when the test
// ends, before the server stops. It keeps working across Restart.
func (s *Temporal) Client(t testing.TB) client.Client {
	t.Helper()
	c, err := client.DialContext(t.Context(), client.Options{
		HostPort:  s.HostPort,
		Namespace: s.Namespace,
		// Warnings only: the SDK's info lines would drown the test output.
		Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	})
	if err != nil {
		t.Fatalf("testenv: dial temporal at %s: %v", s.HostPort, err)
	}
	t.Cleanup(c.Close)
	return c
}

// Stop stops the server now (SIGTERM, then SIGKILL after 10s), for tests
// of what happens while it is down. Calling it again is a no-op.
func (s *Temporal) Stop() { s.srv.Stop() }

// Restart stops the server and starts it again on the same ports and
// DBFile, like an operator restarting it mid-run; it returns once the new
// server is ready. Call it from the test goroutine (it may t.Fatalf).
func (s *Temporal) Restart(t testing.TB) {
	t.Helper()
	if err := s.srv.Restart(t.Context()); err != nil {
		t.Fatalf("testenv: restart temporal: %v", err)
	}
}

// Output is what the server has written so far, across restarts.
func (s *Temporal) Output() string { return s.srv.Output() }

// lastLines trims s to about its last max bytes, at a line boundary.
func lastLines(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "…\n" + s
}

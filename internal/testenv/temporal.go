package testenv

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/conclave-ai/conclave/internal/devserver"
)

// Temporal is a real dev server started for a test.
type Temporal struct {
	*devserver.Server
}

// TemporalOption adjusts StartTemporal.
type TemporalOption func(*devserver.Config)

// WithDBFile keeps the server's state in a file, so Restart keeps workflows.
func WithDBFile(path string) TemporalOption {
	return func(c *devserver.Config) { c.DBFile = path }
}

// WithUI serves the Web UI (off by default to save a test's resources).
func WithUI() TemporalOption {
	return func(c *devserver.Config) { c.Headless = false }
}

// StartTemporal starts `temporal server start-dev` from the pinned CLI on
// free loopback ports and stops it when the test ends.
func StartTemporal(t testing.TB, opts ...TemporalOption) *Temporal {
	t.Helper()
	bin := FindBinary(t, "Temporal CLI", "CONCLAVE_TEMPORAL_BIN", "temporal")
	cfg := devserver.Config{Binary: bin, Headless: true}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := devserver.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	tm := &Temporal{Server: s}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testenv: temporal output:\n%s", s.Output())
		}
		tm.Stop()
	})
	return tm
}

// Client dials the server; the client is closed when the test ends.
func (s *Temporal) Client(t testing.TB) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: s.HostPort, Namespace: s.Namespace,
		Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	if err != nil {
		t.Fatalf("testenv: dial temporal: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

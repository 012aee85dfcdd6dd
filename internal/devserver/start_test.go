//go:build integration

package devserver

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// A port the caller chose is not silently replaced: the error names the
// conflict, and it comes at once rather than after the ready timeout.
func TestStartPortTaken(t *testing.T) {
	wd, _ := os.Getwd()
	bin, err := FindBinary(wd)
	switch {
	case errors.Is(err, ErrNotInstalled): // the rule of testenv.FindBinary, which imports this package
		t.Skipf("the Temporal CLI not found: run `make test` (installs it into ./bin) or set %s", BinaryEnv)
	case err != nil:
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	begin := time.Now()
	s, err := Start(ctx, Config{Binary: bin, Port: port, HTTPPort: mustFreePort(t), MetricsPort: mustFreePort(t), Headless: true})
	if err == nil {
		s.Stop()
		t.Fatalf("Start on taken port %d succeeded", port)
	}
	if !errors.Is(err, errPortTaken) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error %q does not name the port conflict", err)
	}
	t.Logf("failed in %s: %v", time.Since(begin).Round(time.Millisecond), err)
}

func mustFreePort(t *testing.T) int {
	p, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

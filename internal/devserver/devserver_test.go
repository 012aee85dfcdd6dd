package devserver

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestArgs(t *testing.T) {
	base := Config{IP: "127.0.0.1", Port: 1, HTTPPort: 2, MetricsPort: 3, UIPort: 4, Namespace: "default"}
	headless, withUI := base, base
	headless.Headless, headless.DBFile = true, "/tmp/t.db"

	h := strings.Join(headless.args(), " ")
	for _, want := range []string{"--ip 127.0.0.1", "--port 1", "--http-port 2", "--metrics-port 3", "--headless",
		"--db-filename /tmp/t.db", "--namespace default", "--log-level warn",
		"--search-attribute ConclavePhase=Keyword", "--search-attribute ConclaveWinner=Keyword", "--search-attribute ConclaveServeKey=Keyword"} {
		if !strings.Contains(h, want) {
			t.Errorf("headless args %q lack %q", h, want)
		}
	}
	if strings.Contains(h, "--ui-port") {
		t.Errorf("headless args %q set a UI port", h)
	}
	u := withUI.args()
	if slices.Contains(u, "--headless") || slices.Contains(u, "--db-filename") || !strings.Contains(strings.Join(u, " "), "--ui-port 4") {
		t.Errorf("UI args = %q", u)
	}
}

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

func TestFindBinaryEnvMissing(t *testing.T) {
	t.Setenv(BinaryEnv, "/nonexistent/temporal")
	_, err := FindBinary(t.TempDir())
	if err == nil || errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "/nonexistent/temporal") || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("FindBinary error = %v, want the path and the fix, and not ErrNotInstalled", err)
	}
	t.Setenv(BinaryEnv, "")
	t.Setenv("PATH", t.TempDir())
	if _, err := FindTool(t.TempDir(), BinaryEnv, "conclave-no-such-tool", "nothing"); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("FindTool error = %v, want ErrNotInstalled", err)
	}
}

func mustFreePort(t *testing.T) int {
	p, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

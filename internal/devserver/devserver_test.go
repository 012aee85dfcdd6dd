package devserver

import (
	"errors"
	"slices"
	"strings"
	"testing"
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

package testenv

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestFreePort(t *testing.T) {
	p := FreePort(t)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		t.Fatalf("port %d from FreePort cannot be bound: %v", p, err)
	}
	_ = l.Close()
}

func TestModuleRoot(t *testing.T) {
	root := ModuleRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("ModuleRoot = %s, which has no go.mod", root)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testenv")); err != nil {
		t.Fatalf("ModuleRoot = %s, which is not this module", root)
	}
}

// fatalTB records Fatalf instead of failing the real test.
type fatalTB struct {
	testing.TB
	msg     string
	skipped bool
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// Skipf records a skip the same way; skipped tells it from a failure.
func (f *fatalTB) Skipf(format string, args ...any) {
	f.skipped = true
	f.Fatalf(format, args...)
}

// ending runs fn with a fatalTB in a goroutine of its own, as testing
// does, and returns how fn ended the test.
func ending(t *testing.T, fn func(testing.TB)) *fatalTB {
	f := &fatalTB{TB: t}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer func() { _ = recover() }()
		fn(f)
	})
	wg.Wait()
	return f
}

func TestFindBinaryMissing(t *testing.T) {
	t.Setenv("CONCLAVE_TEST_BIN", filepath.Join(t.TempDir(), "nothing"))
	f := ending(t, func(tb testing.TB) { FindBinary(tb, "MinIO", "CONCLAVE_TEST_BIN", "nothing") })
	if f.skipped || !strings.Contains(f.msg, "MinIO was not found at") || !strings.Contains(f.msg, "run `make tools`") {
		t.Fatalf("message %q (skipped: %v) does not fail with what is missing and how to fix it", f.msg, f.skipped)
	}
}

// Without the variable, a tool that is not installed skips the test with
// the fix, so `go test ./...` passes on a fresh checkout.
func TestFindBinaryNotInstalledSkips(t *testing.T) {
	t.Setenv("CONCLAVE_TEST_BIN", "")
	f := ending(t, func(tb testing.TB) { FindBinary(tb, "Nothing", "CONCLAVE_TEST_BIN", "conclave-no-such-tool") })
	if !f.skipped || !strings.Contains(f.msg, "Nothing not found: run `make test` (installs it into ./bin) or set CONCLAVE_TEST_BIN") {
		t.Fatalf("message %q (skipped: %v) does not skip with the fix", f.msg, f.skipped)
	}
}

func TestStartMinIO(t *testing.T) {
	var endpoint string
	t.Run("running", func(t *testing.T) {
		m := StartMinIO(t)
		endpoint = m.Endpoint
		if os.Getenv("AWS_ACCESS_KEY_ID") != m.AccessKey || os.Getenv("AWS_SECRET_ACCESS_KEY") != m.SecretKey {
			t.Fatal("StartMinIO did not export its credentials for storage.Open")
		}
		u := m.URL("bucket", "sess/")
		want := "s3://bucket/sess/?create_bucket=true&endpoint=" + url.QueryEscape(m.Endpoint)
		if !strings.HasPrefix(u, want) {
			t.Fatalf("URL = %s, want prefix %s", u, want)
		}
	})
	// The subtest's cleanup stopped the server.
	if c, err := net.Dial("tcp", strings.TrimPrefix(endpoint, "http://")); err == nil {
		_ = c.Close()
		t.Fatalf("MinIO still listening on %s after cleanup", endpoint)
	}
}

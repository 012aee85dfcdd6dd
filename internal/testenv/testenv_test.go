package testenv

import (
	"fmt"
	"net"
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

func TestStartTemporalMissingBinary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "temporal")
	t.Setenv("CONCLAVE_TEMPORAL_BIN", missing)
	f := ending(t, func(tb testing.TB) { StartTemporal(tb) })
	if !strings.Contains(f.msg, "Temporal CLI was not found at "+missing) || !strings.Contains(f.msg, "run `make tools`") {
		t.Fatalf("message %q does not say what is missing and how to fix it", f.msg)
	}
}

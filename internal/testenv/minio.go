package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"testing"
	"time"
)

// MinIO is a throwaway MinIO server on loopback with its own data directory
// and random root credentials.
type MinIO struct {
	// Endpoint is the S3 API base URL, e.g. http://127.0.0.1:41234.
	Endpoint string
	// AccessKey and SecretKey are the root credentials. StartMinIO also
	// exports them as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY so that
	// storage.Open, which only reads credentials from the environment,
	// works unchanged in tests.
	AccessKey, SecretKey string
	// Region is the region the stores should be opened with.
	Region string

	proc *Process
	// What Start needs to bring the same server back after Stop.
	bin, apiAddr, consoleAddr, dataDir string
}

// StartMinIO starts a MinIO server for the duration of the test and sets the
// AWS credential variables for it. Because it uses t.Setenv, the calling
// test (and its parents) must not be parallel; start one server per test
// that needs one. The binary is $CONCLAVE_MINIO_BIN or <module>/bin/minio.
func StartMinIO(t testing.TB) *MinIO {
	t.Helper()
	bin := FindBinary(t, "MinIO", "CONCLAVE_MINIO_BIN", "minio")
	m := &MinIO{
		AccessKey: "test" + randomHex(t, 6), // MinIO allows 3-20 characters
		SecretKey: randomHex(t, 16),         // and 8-40 here
		Region:    "us-east-1",
	}
	// FreePort releases its port before MinIO binds it, so another process
	// can win the race; a fresh pair of ports is the fix.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		m.bin = bin
		m.apiAddr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		m.consoleAddr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		m.dataDir = t.TempDir()
		endpoint := "http://" + m.apiAddr
		p := StartProcess(t, "minio", m.command())
		lastErr = WaitHTTP(p, endpoint+"/minio/health/live", 60*time.Second)
		if lastErr == nil {
			m.Endpoint, m.proc = endpoint, p
			break
		}
		p.Stop()
		t.Logf("testenv: minio attempt %d: %v\n%s", attempt+1, lastErr, p.Log())
	}
	if lastErr != nil {
		t.Fatalf("testenv: MinIO did not start: %v", lastErr)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", m.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", m.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "") // a developer's token would break the signature
	return m
}

func (m *MinIO) command() *exec.Cmd {
	cmd := exec.Command(m.bin, "server",
		"--address", m.apiAddr,
		"--console-address", m.consoleAddr,
		"--quiet",
		m.dataDir)
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+m.AccessKey,
		"MINIO_ROOT_PASSWORD="+m.SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	return cmd
}

// Stop stops the server (SIGTERM, then SIGKILL after 10s) and waits for it
// to exit, keeping its data directory, for tests of what happens while
// storage is down. Calling it again is a no-op.
func (m *MinIO) Stop() { m.proc.Stop() }

// Start brings a stopped server back on the same address, data directory
// and credentials, like an operator restarting storage, and returns once it
// answers. Stored objects are still there and Endpoint, URL and the AWS
// variables stay valid. Call it from the test goroutine (it may t.Fatalf).
func (m *MinIO) Start(t testing.TB) {
	t.Helper()
	if exited, _ := m.proc.Exited(); !exited {
		t.Fatalf("testenv: MinIO at %s is still running; Stop it before Start", m.Endpoint)
	}
	// The old process has exited, but the kernel may take a moment to
	// release its port; a second try covers that.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		p := StartProcess(t, "minio", m.command())
		lastErr = WaitHTTP(p, m.Endpoint+"/minio/health/live", 60*time.Second)
		if lastErr == nil {
			m.proc = p
			return
		}
		p.Stop()
		t.Logf("testenv: minio restart attempt %d: %v\n%s", attempt+1, lastErr, p.Log())
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("testenv: MinIO did not start again on %s: %v", m.apiAddr, lastErr)
}

// URL returns an s3:// location for storage.Open that targets this server
// and creates the bucket on first use. prefix may be empty.
func (m *MinIO) URL(bucket, prefix string) string {
	q := url.Values{}
	q.Set("endpoint", m.Endpoint)
	q.Set("region", m.Region)
	q.Set("create_bucket", "true")
	return (&url.URL{Scheme: "s3", Host: bucket, Path: "/" + prefix, RawQuery: q.Encode()}).String()
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testenv: random credentials: %v", err)
	}
	return hex.EncodeToString(b)
}

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
		apiPort, consolePort := FreePort(t), FreePort(t)
		endpoint := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
		cmd := exec.Command(bin, "server",
			"--address", fmt.Sprintf("127.0.0.1:%d", apiPort),
			"--console-address", fmt.Sprintf("127.0.0.1:%d", consolePort),
			"--quiet",
			t.TempDir())
		cmd.Env = append(os.Environ(),
			"MINIO_ROOT_USER="+m.AccessKey,
			"MINIO_ROOT_PASSWORD="+m.SecretKey,
			"MINIO_BROWSER=off",
			"MINIO_UPDATE=off",
		)
		p := StartProcess(t, "minio", cmd)
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

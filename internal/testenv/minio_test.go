//go:build integration

package testenv

import (
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
)

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

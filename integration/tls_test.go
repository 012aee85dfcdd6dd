//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
)

// TestTLSConnection puts a TLS-terminating proxy that requires client
// certificates in front of the dev server, the way a secured cluster or
// Temporal Cloud looks to a client, and runs a session through it with a
// worker and `conclave run` configured only by Temporal's standard
// TEMPORAL_TLS_* variables. Plaintext against the same port fails at once
// and says that TLS is required; TLS without a client certificate is refused;
// an API key alone implies TLS.
func TestTLSConnection(t *testing.T) {
	bin := conclaveBinary(t)
	server := testenv.StartTemporal(t)
	pki := testenv.NewPKI(t)
	proxy := testenv.StartTLSProxy(t, pki, server.HostPort, true)
	srv := llmtest.Start(t, llmtest.Func(script))

	dir := t.TempDir()
	tlsEnv := append(cleanEnv(),
		"TEMPORAL_ADDRESS="+proxy.Addr,
		"TEMPORAL_TLS=true",
		"TEMPORAL_TLS_CLIENT_CERT_PATH="+pki.ClientCertFile,
		"TEMPORAL_TLS_CLIENT_KEY_PATH="+pki.ClientKeyFile,
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH="+pki.CAFile,
	)
	var workerOut lockedBuffer
	startProcess(t, bin, tlsEnv, &workerOut, "worker", "--storage", filepath.Join(dir, "sessions"))

	cfg := teamYAML(t, dir, srv.URL(), "agent_a", "agent_b")
	cli := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := cli(tlsEnv, "run", "--config", cfg, "--id", "tls-1", "--poll", "200ms", "Why do durable workflows help agents?")
	require.NoError(t, err, out)
	require.Contains(t, out, "== consensus: winner")
	require.GreaterOrEqual(t, proxy.Handshakes.Load(), int64(2), "worker and CLI both connect through TLS")

	// Plaintext against the TLS port: a clear error, not a hang.
	begin := time.Now()
	out, err = cli(append(cleanEnv(), "TEMPORAL_ADDRESS="+proxy.Addr), "status", "tls-1")
	t.Logf("the plaintext attempt failed after %s", time.Since(begin).Round(time.Millisecond))
	require.Error(t, err, out)
	t.Logf("plaintext: %s", out)
	require.Contains(t, out, "requires TLS")
	require.Less(t, len(strings.TrimSpace(out)), 400, out)

	// TLS but no client certificate: refused by the server, and said so.
	out, err = cli(append(cleanEnv(), "TEMPORAL_ADDRESS="+proxy.Addr, "TEMPORAL_TLS=true",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH="+pki.CAFile), "status", "tls-1")
	require.Error(t, err, out)
	t.Logf("no client certificate: %s", out)
	require.Contains(t, out, "no client certificate or API key was given")

	// An API key alone implies TLS (Temporal Cloud's way): through a proxy
	// that needs no client certificate, the key and the CA are enough, and
	// the key shows nowhere.
	keyProxy := testenv.StartTLSProxy(t, pki, server.HostPort, false)
	out, err = cli(append(cleanEnv(), "TEMPORAL_ADDRESS="+keyProxy.Addr, "TEMPORAL_API_KEY=test-api-key-not-for-logs",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH="+pki.CAFile), "status", "tls-1")
	require.NoError(t, err, out)
	require.Contains(t, out, `"phase": "done"`)
	require.Equal(t, int64(1), keyProxy.Handshakes.Load())
	require.NotContains(t, out+workerOut.String(), "test-api-key-not-for-logs")

	// The same flags as the temporal CLI work too.
	out, err = cli(cleanEnv(), "status", "tls-1", "--address", proxy.Addr, "--tls-cert-path", pki.ClientCertFile,
		"--tls-key-path", pki.ClientKeyFile, "--tls-ca-path", pki.CAFile)
	require.NoError(t, err, out)
	require.Contains(t, out, `"phase": "done"`)
}

// cleanEnv is this process's environment without Temporal client settings,
// so a developer's own TEMPORAL_* variables or profile cannot leak in.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TEMPORAL_") {
			env = append(env, kv)
		}
	}
	return append(env, "TEMPORAL_CONFIG_FILE="+os.DevNull)
}

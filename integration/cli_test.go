//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/demo"
	"github.com/conclave-ai/conclave/internal/testenv"
)

// TestCLIAgainstRealServer drives the conclave binary as a user would:
// a worker process, `run` following a session to its answer, then
// `status`, `answer` and a `say` that the finished session rejects.
func TestCLIAgainstRealServer(t *testing.T) {
	bin := conclaveBinary(t)
	server := testenv.StartTemporal(t)
	model := demo.NewServer()
	require.NoError(t, model.Start())
	t.Cleanup(model.Close)

	dir := t.TempDir()
	startWorker(t, bin, server.HostPort, filepath.Join(dir, "sessions"))
	cfg := filepath.Join(dir, "team.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`agents:
  - id: analyst
    backend: {type: openai, model: demo-analyst, base_url: `+model.URL()+`}
  - id: critic
    backend: {type: openai, model: demo-critic, base_url: `+model.URL()+`}
  - id: writer
    backend: {type: openai, model: demo-writer, base_url: `+model.URL()+`}
`), 0o644))

	cli := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+server.HostPort)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := cli("run", "--config", cfg, "--id", "cli-1", "--poll", "100ms", "Why do durable workflows help agents?")
	require.NoError(t, err, out)
	require.Contains(t, out, "session cli-1 started")
	require.Contains(t, out, "== consensus: winner")
	require.Contains(t, out, "Final answer (after the agents compared their work)")
	require.Contains(t, out, filepath.Join(dir, "sessions", "cli-1"))
	require.Contains(t, out, "/namespaces/default/workflows/cli-1")

	out, err = cli("status", "cli-1")
	require.NoError(t, err, out)
	var s struct {
		Phase     string `json:"phase"`
		Consensus bool   `json:"consensus"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	require.Equal(t, "done", s.Phase)
	require.True(t, s.Consensus)

	out, err = cli("answer", "cli-1")
	require.NoError(t, err, out)
	require.True(t, strings.HasPrefix(out, "Final answer"), out)

	out, err = cli("say", "cli-1", "too late")
	require.Error(t, err)
	require.Contains(t, out, "cli-1")

	out, err = cli("cancel", "cli-1")
	require.Error(t, err, "cancelling a finished session is an error")
	require.Contains(t, out, "session cli-1 already ended (Completed)")
	require.NotContains(t, out, "cancellation requested")

	// A finished session's id is used once: the start is refused in one
	// line, and `answer` still shows the finished session.
	for _, mode := range []string{"--automation", "--detach"} {
		out, err = cli("run", "--config", cfg, "--id", "cli-1", "--poll", "100ms", mode, "Another question")
		require.Error(t, err, out)
		require.Contains(t, out, "session cli-1 already exists and has ended (completed, started ")
		require.NotContains(t, out, "QUESTION")
		require.NotContains(t, out, "session cli-1 started")
		require.Equal(t, 1, strings.Count(strings.TrimSpace(out), "\n")+1, out)
	}
	out, err = cli("answer", "cli-1")
	require.NoError(t, err, out)
	require.True(t, strings.HasPrefix(out, "Final answer"), out)

	out, err = cli("--version")
	require.NoError(t, err, out)
	require.True(t, strings.HasPrefix(out, "conclave version "), out)

	out, err = cli("status", "no-such-session")
	require.Error(t, err)
	require.Contains(t, out, "no-such-session")

	// A bad config never reaches the server.
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("agents:\n  - id: A!\n    backend: {type: openai, model: m}\n"), 0o644))
	out, err = cli("run", "--config", bad, "task")
	require.Error(t, err)
	require.Contains(t, out, "agents[0].id")
}

// TestCLIRunIDAlreadyRunning: `run --id X` while X runs is refused with a
// clear error instead of following the running session as if it were new.
// No worker polls the queue, so the first session stays running.
func TestCLIRunIDAlreadyRunning(t *testing.T) {
	bin := conclaveBinary(t)
	server := testenv.StartTemporal(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "team.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("agents:\n  - id: a\n    backend: {type: openai, model: m, base_url: http://127.0.0.1:9/v1}\n"), 0o644))
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append(args, "--task-queue", "nobody-polls")...)
		cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+server.HostPort)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := cli("run", "--config", cfg, "--id", "r2", "--detach", "Explain apples")
	require.NoError(t, err, out)
	require.Contains(t, out, "session r2 started")

	for _, mode := range [][]string{{"--automation"}, {"--detach"}, nil} {
		args := append([]string{"run", "--config", cfg, "--id", "r2", "--poll", "100ms"}, mode...)
		out, err = cli(append(args, "Explain oranges")...)
		require.Error(t, err, out)
		require.Contains(t, out, "session r2 is already running (started ")
		require.Contains(t, out, "`conclave status r2`")
		require.NotContains(t, out, "QUESTION")
		require.NotContains(t, out, "started\n")
	}
}

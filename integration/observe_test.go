//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
)

// startProcess starts bin in its own process group with env; it is killed
// when the test ends.
func startProcess(t *testing.T, bin string, env []string, out *lockedBuffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// teamYAML writes a config whose agents the fault script knows (m-<id>).
func teamYAML(t *testing.T, dir, baseURL string, ids ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("agents:\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "  - id: %s\n    backend: {type: openai, model: m-%s, base_url: %s}\n", id, id, baseURL)
	}
	path := filepath.Join(dir, "team.yaml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// eventually waits for cond, checking every 100 ms, up to limit (a guard
// against a hang, not a timing assertion).
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFailuresVisibleWhileTheyHappen starts a session before any worker
// runs, then a worker whose model answers agent_b with 500s until the test
// has seen them: `conclave run` must warn that no worker polls the task
// queue, and both `run` and `status` must show agent_b's step retrying with
// its attempt and the model's error, before the model recovers and the
// session ends in consensus.
func TestFailuresVisibleWhileTheyHappen(t *testing.T) {
	bin := conclaveBinary(t)
	server := testenv.StartTemporal(t)
	var recovered atomic.Bool
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if agentOf(r.Model) == "agent_b" && !recovered.Load() {
			return llmtest.Reply{Status: http.StatusInternalServerError, Error: "upstream exploded"}
		}
		return script(r)
	}))
	dir := t.TempDir()
	cfg := teamYAML(t, dir, srv.URL(), "agent_a", "agent_b")
	env := append(cleanEnv(), "TEMPORAL_ADDRESS="+server.HostPort)

	var runOut lockedBuffer
	run := startProcess(t, bin, env, &runOut, "run", "--config", cfg, "--id", "visible-1", "--poll", "200ms", "Explain durable execution.")
	eventually(t, time.Minute, "run warns that no worker polls", func() bool {
		return strings.Contains(runOut.String(), "no worker polls task queue")
	})

	status := func() (string, error) {
		cmd := exec.Command(bin, "status", "visible-1")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := status()
	require.NoError(t, err, out)
	require.Contains(t, out, `"execution": "Running"`)
	require.Contains(t, out, "no worker polls task queue")

	var workerOut lockedBuffer
	startProcess(t, bin, env, &workerOut, "worker", "--storage", filepath.Join(dir, "sessions"))

	var seen struct {
		Retrying []struct {
			Step        string `json:"step"`
			Attempt     int    `json:"attempt"`
			LastFailure string `json:"last_failure"`
		} `json:"retrying"`
	}
	var lastStatus string
	defer func() {
		if t.Failed() {
			t.Logf("last status:\n%s\nrun:\n%s\nworker:\n%s", lastStatus, runOut.String(), workerOut.String())
		}
	}()
	eventually(t, 2*time.Minute, "status shows agent_b's step retrying", func() bool {
		out, err := status()
		lastStatus = out
		if err != nil || json.Unmarshal([]byte(out), &seen) != nil {
			return false
		}
		for _, r := range seen.Retrying {
			if strings.Contains(r.Step, "agent_b") && r.Attempt >= 2 && strings.Contains(r.LastFailure, "upstream exploded") {
				return true
			}
		}
		return false
	})
	t.Logf("status: %+v", seen.Retrying)
	eventually(t, 2*time.Minute, "run shows the retrying step", func() bool {
		out := runOut.String()
		return strings.Contains(out, "agent_b · step 1: attempt ") && strings.Contains(out, "upstream exploded")
	})

	recovered.Store(true)
	require.NoError(t, run.Wait(), runOut.String())
	out = runOut.String()
	t.Logf("conclave run:\n%s", out)
	require.Contains(t, out, "== consensus: winner agent_a")
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "attempt") {
			require.Less(t, len(line), 400, "one short line per retry: %s", line)
		}
	}
}

// TestDroppedAgentAndShortErrors gives agent_b a model that does not exist
// (404): the session goes on without it, and run, status and the result
// say why it was dropped. A session whose only agent has that model fails
// with one short line that names the cause once.
func TestDroppedAgentAndShortErrors(t *testing.T) {
	bin := conclaveBinary(t)
	server := testenv.StartTemporal(t)
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if agentOf(r.Model) == "agent_b" {
			return llmtest.Reply{Status: http.StatusNotFound, Error: "The model `m-agent_b` does not exist", ErrorCode: "model_not_found"}
		}
		return script(r)
	}))
	dir := t.TempDir()
	cfg := teamYAML(t, dir, srv.URL(), "agent_a", "agent_b")
	env := append(cleanEnv(), "TEMPORAL_ADDRESS="+server.HostPort)
	var workerOut lockedBuffer
	startProcess(t, bin, env, &workerOut, "worker", "--storage", filepath.Join(dir, "sessions"))

	cli := func(args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	out, errOut, err := cli("run", "--config", cfg, "--id", "dropped-1", "--poll", "200ms", "Explain durable execution.")
	require.NoError(t, err, out+errOut)
	t.Logf("run:\n%s", out)
	require.Contains(t, out, "dropped agent_b: step 1: ")

	out, _, err = cli("status", "dropped-1")
	require.NoError(t, err, out)
	var st struct {
		Agents map[string]struct {
			State      string `json:"state"`
			FailReason string `json:"fail_reason"`
		} `json:"agents"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Equal(t, "failed", st.Agents["agent_b"].State)
	require.Contains(t, st.Agents["agent_b"].FailReason, "does not exist")

	solo := filepath.Join(dir, "solo")
	require.NoError(t, os.MkdirAll(solo, 0o755))
	cfg = teamYAML(t, solo, srv.URL(), "agent_b")
	_, errOut, err = cli("run", "--config", cfg, "--id", "dropped-2", "--poll", "200ms", "Explain durable execution.")
	require.Error(t, err)
	t.Logf("stderr: %s", errOut)
	line := strings.TrimSpace(errOut)
	require.NotContains(t, line, "\n", "one line")
	require.Less(t, len(line), 400, line)
	require.Equal(t, 1, strings.Count(line, "does not exist"), "the cause once: %s", line)
	require.Contains(t, line, "--verbose")
	_, errOut, err = cli("run", "--verbose", "--config", cfg, "--id", "dropped-3", "--poll", "200ms", "Explain durable execution.")
	require.Error(t, err)
	require.Contains(t, errOut, "detail:")
}

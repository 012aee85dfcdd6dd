//go:build integration

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
)

// Step mode and session status work on a session stored in S3 (real MinIO).
func TestStepModeOnS3(t *testing.T) {
	minio := testenv.StartMinIO(t)
	setStepKey(t)
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if n := len(r.Messages); r.Last().Role == "tool" && r.Messages[n-2].ToolCalls[0].Name == "write_file" {
			return call("new_answer", `{"content":"answer with notes.md"}`)
		}
		if r.Contains("(no answers available yet)") {
			return call("write_file", `{"path":"notes.md","content":"# notes"}`)
		}
		return call("vote", `{"agent_id":"agent1","reason":"only answer"}`)
	}))
	dir := t.TempDir()
	cfg := agentConfig(t, dir, "agent_a", srv.URL())
	url := minio.URL("sessions", "s3-session")

	code, out, errs := runCLI(t, "step", "--session-dir", url, "--config", cfg, "--agents", "agent_a", "--automation", "task")
	require.Equal(t, 0, code, errs)
	var r stepResult
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Equal(t, "new_answer", r.Action)
	require.True(t, strings.HasPrefix(r.Workspace, "s3://sessions/s3-session/agents/agent_a/001/workspace"), r.Workspace)

	code, out, errs = runCLI(t, "step", "--session-dir", url, "--config", cfg, "--automation", "task")
	require.Equal(t, 0, code, errs)
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Equal(t, "vote", r.Action)

	s := status(t, url)
	require.True(t, s.Consensus)
	require.Equal(t, "agent_a", s.Winner)
}

// Issue 22, item 5: two `conclave step` runs of one agent at once both
// exited 0 into one step folder, the first answer lost. The second run is
// now refused before any model call (exit 1, saying what to do), locally
// and on S3 (real MinIO, conditional create), and the folder holds the
// first run's action alone.
func TestStepModeOneWriterPerStepFolder(t *testing.T) {
	minio := testenv.StartMinIO(t)
	setStepKey(t)
	for name, session := range map[string]string{
		"local": filepath.Join(t.TempDir(), "session"),
		"s3":    minio.URL("sessions", "one-writer"),
	} {
		t.Run(name, func(t *testing.T) {
			release := make(chan struct{})
			srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
				select {
				case <-release:
				case <-time.After(time.Minute):
				}
				if r.Contains("the first run's answer") {
					return call("vote", `{"agent_id":"agent1","reason":"it is there"}`)
				}
				return call("new_answer", `{"content":"the first run's answer"}`)
			}))
			dir := t.TempDir()
			cfg := agentConfig(t, dir, "agent_a", srv.URL())
			step := func() (int, string, string) {
				return runCLI(t, "step", "--session-dir", session, "--config", cfg, "--agents", "agent_a,agent_b", "--automation", "task")
			}
			first := make(chan int, 1)
			go func() { code, _, _ := step(); first <- code }()
			require.Eventually(t, func() bool { return srv.Count() == 1 }, 30*time.Second, 10*time.Millisecond)

			code, _, errs := step()
			assert.Equal(t, 1, code)
			assert.Contains(t, errs, "agents/agent_a/001/claim.json: step 1 of agent_a is being run by the run started")
			assert.Equal(t, 1, srv.Count(), "the second run must not call the model")

			close(release)
			require.Equal(t, 0, <-first)
			s := status(t, session, "--agents", "agent_a,agent_b")
			assert.Equal(t, "answered", s.Agents["agent_a"].State)
			assert.Equal(t, 1, s.Agents["agent_a"].LatestStep)

			// The claim is gone with its run: the next step runs.
			code, out, errs := step()
			require.Equal(t, 0, code, errs)
			assert.Contains(t, out, `"step_number":2`)
		})
	}
}

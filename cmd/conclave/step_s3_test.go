//go:build integration

package main

import (
	"encoding/json"
	"strings"
	"testing"

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

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

// A session that cannot be read, or whose agent folder cannot be written,
// is bad input (exit 1), found before any model call is paid for.
func TestStepRefusesAnUnusableSessionBeforeAnyModelCall(t *testing.T) {
	setStepKey(t)
	srv := llmtest.Start(t, llmtest.Call("new_answer", `{"content":"A1"}`))
	dir := t.TempDir()
	cfg := agentConfig(t, dir, "agent_a", srv.URL())
	step := func(session string) (int, string) {
		code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", cfg, "--automation", "task")
		return code, errs
	}

	unwritable := filepath.Join(dir, "unwritable")
	require.NoError(t, os.MkdirAll(filepath.Join(unwritable, "agents"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(unwritable, "agents", "agent_a"), []byte("not a directory"), 0o644))
	code, errs := step(unwritable)
	require.Equal(t, 1, code, errs)
	require.Contains(t, errs, "cannot be written")

	if os.Geteuid() != 0 { // permissions do not stop root
		for name, mode := range map[string]os.FileMode{"unreadable": 0o000, "read-only": 0o555} {
			d := filepath.Join(dir, name)
			require.NoError(t, os.MkdirAll(d, 0o755))
			require.NoError(t, os.Chmod(d, mode))
			t.Cleanup(func() { _ = os.Chmod(d, 0o755) })
			code, errs = step(d)
			require.Equal(t, 1, code, "%s: %s", name, errs)
		}
	}
	require.Zero(t, srv.Count(), "no model call was paid for")
}

// A relaunched step after an interrupted one resumes only when it was given
// the same inputs: an identical relaunch continues the checkpoint (the call
// that returned is not paid for again), one with a changed task starts fresh.
func TestStepRelaunchResumesOnlyTheSameInputs(t *testing.T) {
	setStepKey(t)
	for name, task := range map[string]string{"identical": "old task", "changed task": "new task"} {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.Start(t,
				llmtest.Text("working on the old task").Once(),
				llmtest.Fail(400, "bad request").Once(),
				llmtest.Call("new_answer", `{"content":"A1"}`),
			)
			dir := t.TempDir()
			session := filepath.Join(dir, "session")
			cfg := agentConfig(t, dir, "agent_a", srv.URL())
			code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", cfg, "--agents", "agent_a", "--automation", "old task")
			require.Equal(t, exitNoAction, code, errs)
			require.FileExists(t, filepath.Join(session, "agents/agent_a/001/trace.jsonl"), "the interrupted attempt left its checkpoint")
			// As if the process had been killed mid-step, before it could
			// mark the step over: the folder is a step in progress, which
			// the next step of the agent resumes.
			require.NoError(t, os.Remove(filepath.Join(session, "agents/agent_a/001/launch.json")))

			code, _, errs = runCLI(t, "step", "--session-dir", session, "--config", cfg, "--automation", task)
			require.Equal(t, 0, code, errs)
			relaunch := srv.Requests()[2]
			if task == "old task" {
				require.True(t, relaunch.Contains("working on the old task"), "the relaunch continued the checkpoint")
				return
			}
			require.Contains(t, errs, "starting the step fresh")
			require.Len(t, relaunch.Messages, 2)
			require.Contains(t, relaunch.Messages[1].Content, "new task")
			require.False(t, relaunch.Contains("old task"), "the old attempt was not continued")
		})
	}
}

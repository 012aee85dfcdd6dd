package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

// loopUntilDone runs docs/step-mode.md's loop for at most maxRounds.
func loopUntilDone(t *testing.T, session string, team []string, cfgs map[string]string, maxRounds int) (statusOut, int) {
	t.Helper()
	var s statusOut
	rounds := 0
	for ; rounds < maxRounds; rounds++ {
		code, out, errs := runCLI(t, "session", "status", "--session-dir", session, "--agents", strings.Join(team, ","))
		require.Equal(t, 0, code, errs)
		require.NoError(t, json.Unmarshal([]byte(out), &s))
		if s.Phase != "coordinating" {
			break
		}
		var wg sync.WaitGroup
		for _, id := range s.Relaunch {
			wg.Go(func() {
				runCLI(t, "step", "--session-dir", session, "--config", cfgs[id], "--agents", strings.Join(team, ","), "--automation", "task")
			})
		}
		wg.Wait()
	}
	return s, rounds
}

// Found by trying to break step mode: an agent whose steps always end
// without an action (its model rejects every call) was relaunched forever.
// After three such steps in a row it counts as failed, as the workflow
// drops an agent whose step failed for good: the others decide, and when
// every agent failed the session ends failed.
func TestStepModeDropsAnAgentThatKeepsFailing(t *testing.T) {
	setStepKey(t)
	self := map[string]string{"model-agent_a": "agent1", "model-agent_b": "agent2"}
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if r.Model == "model-agent_c" {
			return llmtest.Reply{Status: 400, Error: "bad request"}
		}
		if r.HasTool("new_answer") && !r.Contains("<"+self[r.Model]+".1>") {
			return call("new_answer", `{"content":"answer by `+r.Model+`"}`)
		}
		return call("vote", `{"agent_id":"agent1","reason":"best"}`)
	}))
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	team := []string{"agent_a", "agent_b", "agent_c"}
	cfgs := map[string]string{}
	for _, id := range team {
		cfgs[id] = agentConfig(t, dir, id, srv.URL())
	}
	s, rounds := loopUntilDone(t, session, team, cfgs, 8)
	require.Equal(t, "done", s.Phase, "after %d rounds: %+v", rounds, s)
	require.Equal(t, "agent_a", s.Winner)
	require.Equal(t, "failed", s.Agents["agent_c"].State)

	all := llmtest.Start(t, llmtest.Fail(400, "bad request"))
	session2 := filepath.Join(dir, "session2")
	for _, id := range team[:2] {
		cfgs[id] = agentConfig(t, dir, id, all.URL())
	}
	s, _ = loopUntilDone(t, session2, team[:2], cfgs, 6)
	require.Equal(t, "failed", s.Phase, "every agent failed")
}

// A failed step is recorded as the workflow's activity records it, so the
// replay drops an agent exactly when the workflow would: a model that
// rejects the request drops it at once; a model that is unavailable gets
// the step tried again, in the same folder.
func TestStepModeFailsAsTheWorkflowDoes(t *testing.T) {
	setStepKey(t)
	for _, tc := range []struct {
		name     string
		fail     llmtest.Rule
		state    string
		ended    string
		relaunch []string
	}{
		{"rejected", llmtest.Fail(400, "bad request"), "failed", "failed", []string{}},
		{"unavailable", llmtest.Fail(503, "overloaded"), "no_action", "retry", []string{"agent_a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.Start(t, tc.fail)
			dir := t.TempDir()
			session := filepath.Join(dir, "session")
			cfg := agentConfig(t, dir, "agent_a", srv.URL())
			code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", cfg, "--agents", "agent_a", "--automation", "task")
			require.Equal(t, exitNoAction, code, errs)
			data, err := os.ReadFile(filepath.Join(session, "agents/agent_a/001/launch.json"))
			require.NoError(t, err)
			require.Contains(t, string(data), `"ended": "`+tc.ended+`"`)
			s := status(t, session)
			require.Equal(t, tc.state, s.Agents["agent_a"].State)
			require.Equal(t, tc.relaunch, s.Relaunch)
		})
	}
}

// Step mode refuses a step the workflow would not launch: one past
// max_steps_per_agent, or any step of a session that is over.
func TestStepModeRefusesStepsPastTheEnd(t *testing.T) {
	setStepKey(t)
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if r.HasTool("vote") {
			return call("vote", `{"agent_id":"agent1","reason":"mine"}`)
		}
		return call("new_answer", `{"content":"A"}`)
	}))
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	cfg := agentConfig(t, dir, "agent_a", srv.URL())
	step := func() (int, string) {
		code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", cfg, "--agents", "agent_a", "--automation", "task")
		return code, errs
	}
	code, errs := step()
	require.Equal(t, 0, code, errs)
	code, errs = step()
	require.Equal(t, 0, code, errs)
	require.Equal(t, "done", status(t, session).Phase, "a lone agent voted for its own answer")
	code, errs = step()
	require.Equal(t, 1, code)
	require.Contains(t, errs, "the session is over")
	require.Equal(t, "done", status(t, session).Phase, "nothing changed")

	capped := filepath.Join(dir, "capped.yaml")
	data, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(capped, append(data, []byte("orchestrator:\n  max_steps_per_agent: 1\n")...), 0o644))
	session2 := filepath.Join(dir, "session2")
	code, _, errs = runCLI(t, "step", "--session-dir", session2, "--config", capped, "--agents", "agent_a", "--automation", "task")
	require.Equal(t, 0, code, errs)
	code, _, errs = runCLI(t, "step", "--session-dir", session2, "--config", capped, "--automation", "task")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "max_steps_per_agent (1)")
}

// Without --config, session status judges a workflow's session by the
// config it stored (config.json); a garbage launch.json closes its folder
// instead of leaving a step running forever.
func TestSessionStatusUsesTheStoredConfig(t *testing.T) {
	dir := t.TempDir()
	answers(t, dir, "agent_a", "agent_b")
	require.Equal(t, "coordinating", status(t, dir).Phase, "by default everyone votes")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"),
		[]byte(`{"agents":[{"id":"agent_a"},{"id":"agent_b"}],"orchestrator":{"skip_voting":true}}`), 0o644))
	s := status(t, dir)
	require.Equal(t, "done", s.Phase, "skip_voting from config.json")

	writeStep(t, dir, "agent_b", "002", "launch.json", "{garbage")
	s = status(t, dir)
	require.False(t, s.Agents["agent_b"].Running, "a damaged launch.json closes the folder")
}

// A step mode step is visible from its claim, before its first model call
// returns: the agent shows running and is not relaunched.
func TestSessionStatusSeesAClaimedStep(t *testing.T) {
	dir := t.TempDir()
	answers(t, dir, "agent_a", "agent_b")
	writeStep(t, dir, "agent_a", "002", "claim.json", `{"token":"x","timestamp":"2026-03-20T22:33:03Z"}`)
	s := status(t, dir)
	require.True(t, s.Agents["agent_a"].Running)
	require.Equal(t, []string{"agent_b"}, s.Relaunch)
}

// The reason a step ended without an action is kept in its launch.json,
// cut on a rune boundary within 300 bytes and marked as cut.
func TestStepEndReasonCutsOnARune(t *testing.T) {
	ctx := t.Context()
	st, err := storage.Open(ctx, t.TempDir())
	require.NoError(t, err)
	cause := errors.New(strings.Repeat("x", 299) + strings.Repeat("é", 100))
	require.NoError(t, endAttempt(ctx, st, "agent_a", 1, cause))
	raw, err := st.Get(ctx, session.LaunchKey("agent_a", 1))
	require.NoError(t, err)
	var f session.LaunchFile
	require.NoError(t, json.Unmarshal(raw, &f))
	require.True(t, f.Fenced)
	require.True(t, utf8.ValidString(f.Reason), "stored %q", f.Reason)
	require.LessOrEqual(t, len(f.Reason), 300)
	require.True(t, strings.HasPrefix(f.Reason, strings.Repeat("x", 297)))
	require.True(t, strings.HasSuffix(f.Reason, "…"))
	require.NotContains(t, string(raw), `\ufffd`)
}

// What a model or a tool server says reaches stderr neutralised: an error
// message cannot retitle the terminal or color it.
func TestStepErrorsAreNeutralised(t *testing.T) {
	setStepKey(t)
	srv := llmtest.Start(t, llmtest.Fail(400, "bad \x1b]0;pwned\x07 \x1b[31mred"))
	dir := t.TempDir()
	cfg := agentConfig(t, dir, "agent_a", srv.URL())
	code, _, errs := runCLI(t, "step", "--session-dir", filepath.Join(dir, "s"), "--config", cfg, "--agents", "agent_a", "--automation", "task")
	require.Equal(t, exitNoAction, code)
	require.NotContains(t, errs, "\x1b")
	require.NotContains(t, errs, "\x07")
	require.Contains(t, errs, "␛")
}

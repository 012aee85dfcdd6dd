package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

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

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

// TestStepLabelsComeFromTheTeam runs three round-1 steps at the same
// time on one session: each loads the session before any answer exists,
// yet their labels follow the team (sorted ids), recorded once in
// session.json by whichever step came first.
func TestStepLabelsComeFromTheTeam(t *testing.T) {
	setStepKey(t)
	ids := []string{"agent_c", "agent_a", "agent_b"} // any order: the team is sorted
	var mu sync.Mutex
	arrived := map[string]bool{}
	all := make(chan struct{})
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		arrived[r.Model] = true
		if len(arrived) == len(ids) {
			select {
			case <-all:
			default:
				close(all)
			}
		}
		mu.Unlock()
		select { // every step has loaded the session before any answers
		case <-all:
		case <-time.After(30 * time.Second):
		}
		return call("new_answer", `{"content":"round 1 by `+r.Model+`"}`)
	}))
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	results := make([]stepResult, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		cfg := agentConfig(t, dir, id, srv.URL())
		wg.Go(func() {
			code, out, errs := runCLI(t, "step", "--session-dir", session, "--config", cfg,
				"--agents", "agent_b,agent_c,agent_a", "--automation", "task")
			if code != 0 || json.Unmarshal([]byte(out), &results[i]) != nil {
				t.Errorf("step %s: exit %d: %s%s", id, code, out, errs)
			}
		})
	}
	wg.Wait()
	select {
	case <-all:
	default:
		t.Fatal("the three steps did not run at the same time")
	}
	want := map[string]string{"agent_a": "agent1.1", "agent_b": "agent2.1", "agent_c": "agent3.1"}
	for i, id := range ids {
		require.Equal(t, want[id], results[i].Label, id)
	}
	var info struct {
		Agents []string `json:"agents"`
		Mode   string   `json:"mode"`
	}
	data, err := os.ReadFile(filepath.Join(session, "session.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &info))
	require.Equal(t, []string{"agent_a", "agent_b", "agent_c"}, info.Agents)
	require.Equal(t, "voting", info.Mode)

	// Later steps need no --agents; a different team is refused.
	cfg := agentConfig(t, dir, "agent_a", srv.URL())
	code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", cfg, "--agents", "agent_a,agent_b", "--automation", "task")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "is not the session's team agent_a,agent_b,agent_c")
	other := agentConfig(t, dir, "agent_x", srv.URL())
	code, _, errs = runCLI(t, "step", "--session-dir", session, "--config", other, "--automation", "task")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "agent agent_x is not in the session's team")
}

// A session without session.json and without --agents has no known team:
// the step is refused before any model call.
func TestStepRefusesAnUnknownTeam(t *testing.T) {
	setStepKey(t)
	srv := llmtest.Start(t, llmtest.Call("new_answer", `{"content":"A1"}`))
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	cfg := agentConfig(t, dir, "agent_a", srv.URL())
	code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", cfg, "--automation", "task")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "team is unknown: pass --agents")
	code, _, errs = runCLI(t, "step", "--session-dir", session, "--config", cfg, "--agents", "agent_b,agent_c", "--automation", "task")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "does not include this config's agent agent_a")
	require.Zero(t, srv.Count(), "no model call was paid for")
	require.NoFileExists(t, filepath.Join(session, "session.json"))
}

// TestStepModeLoopEnds runs docs/step-mode.md's orchestrator loop on a
// team that never agrees: the split is re-voted max_revote_rounds times
// (vote-only steps shown the tally), then plurality ends the loop.
func TestStepModeLoopEnds(t *testing.T) {
	setStepKey(t)
	anon := map[string]string{"model-agent_a": "agent1", "model-agent_b": "agent2"}
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if !r.Contains("<" + anon[r.Model] + ".1>") { // its own answer first
			return call("new_answer", `{"content":"mine, by `+r.Model+`"}`)
		}
		return call("vote", `{"agent_id":"`+anon[r.Model]+`","reason":"mine is best"}`)
	}))
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	team := []string{"agent_a", "agent_b"}
	cfgs := map[string]string{}
	for _, id := range team {
		cfgs[id] = agentConfig(t, dir, id, srv.URL())
	}
	var s statusOut
	rounds := 0
	for ; rounds < 10; rounds++ {
		code, out, errs := runCLI(t, "session", "status", "--session-dir", session, "--agents", strings.Join(team, ","))
		require.Equal(t, 0, code, errs)
		require.NoError(t, json.Unmarshal([]byte(out), &s))
		if s.Phase != "coordinating" {
			break
		}
		require.NotEmpty(t, s.Relaunch, "round %d: nothing to launch and not over: %s", rounds, out)
		var wg sync.WaitGroup // the loop's `&` and `wait`
		for _, id := range s.Relaunch {
			wg.Go(func() {
				code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", cfgs[id], "--agents", strings.Join(team, ","), "--automation", "task")
				if code != 0 {
					t.Errorf("step %s: exit %d: %s", id, code, errs)
				}
			})
		}
		wg.Wait()
	}
	require.Equal(t, "done", s.Phase)
	require.Equal(t, 4, rounds, "rounds of steps: answers, votes, two re-votes")
	require.False(t, s.Consensus)
	require.Equal(t, "plurality", s.DecidedBy)
	require.Equal(t, "agent_a", s.Winner)

	reqs := srv.Requests()
	require.Len(t, reqs, 8)
	revotes := 0
	for _, r := range reqs {
		if r.Contains("The previous vote was split: agent1 1, agent2 1") {
			revotes++
			require.False(t, r.HasTool("new_answer"), "a re-vote is vote-only")
		} else {
			require.True(t, r.HasTool("new_answer"), "answers and first votes: voting mode")
		}
	}
	require.Equal(t, 4, revotes, "two re-votes of two agents")
}

// A step that ended without an action (exit 2) leaves its checkpoint for a
// relaunch to resume but is fenced as over, so `session status` relaunches
// it instead of waiting for it; its relaunch is a running step again.
func TestStepWithoutActionIsNotRunning(t *testing.T) {
	setStepKey(t)
	srv := llmtest.Start(t,
		llmtest.Text("working on it").Once(),
		llmtest.Fail(503, "overloaded").Once(),
		llmtest.Call("new_answer", `{"content":"A1"}`),
	)
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	cfg := agentConfig(t, dir, "agent_a", srv.URL())
	code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", cfg, "--agents", "agent_a", "--automation", "task")
	require.Equal(t, exitNoAction, code, errs)
	require.FileExists(t, filepath.Join(session, "agents/agent_a/001/trace.jsonl"))
	s := status(t, session)
	require.False(t, s.Agents["agent_a"].Running, "a step that exited is not running")
	require.Equal(t, []string{"agent_a"}, s.Relaunch)

	// The model was unavailable: the step is tried again in the same
	// folder, as Temporal retries an activity, resuming its checkpoint.
	code, _, errs = runCLI(t, "step", "--session-dir", session, "--config", cfg, "--automation", "task")
	require.Equal(t, 0, code, errs)
	require.FileExists(t, filepath.Join(session, "agents/agent_a/001/answer.json"), "the retry kept the step's number")
	require.True(t, srv.Requests()[2].Contains("working on it"), "the retry resumed the checkpoint")
	s = status(t, session)
	require.Equal(t, "answered", s.Agents["agent_a"].State)
	require.Equal(t, 1, s.Agents["agent_a"].LatestStep)
}

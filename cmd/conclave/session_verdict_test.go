package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// orchestratorConfig writes an agent config whose orchestrator section is
// given, for `session status --config`.
func orchestratorConfig(t *testing.T, orchestrator string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "orchestrator.yaml")
	body := "agent:\n  id: agent_b\n  backend: {type: openai, model: m, base_url: http://127.0.0.1:1/v1, api_key_env: STEP_TEST_KEY}\norchestrator:\n" + orchestrator
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func answers(t *testing.T, dir string, ids ...string) {
	for _, id := range ids {
		writeStep(t, dir, id, "001", "answer.json", `{"agent_id":"`+id+`","answer":"r1 by `+id+`","timestamp":"2026-03-20T22:32:03Z"}`)
	}
}

func voteStep(t *testing.T, dir, voter, step, target, seen string) {
	writeStep(t, dir, voter, step, "vote.json", `{"voter":"`+voter+`","target":"`+target+`","reason":"r","seen_steps":`+seen+`}`)
}

// TestSessionStatusRunningStep: a step folder holding only its checkpoint
// is a step in progress: the agent shows as running, is not relaunched,
// and the session is not done while it runs — until the step's
// launch.json fences it (an attempt that ended without an action).
func TestSessionStatusRunningStep(t *testing.T) {
	dir := t.TempDir()
	answers(t, dir, "agent_a", "agent_b", "agent_c")
	seen := `{"agent_a":1,"agent_b":1,"agent_c":1}`
	for _, id := range []string{"agent_a", "agent_b", "agent_c"} {
		voteStep(t, dir, id, "002", "agent_b", seen)
	}
	writeStep(t, dir, "agent_a", "003", "trace.jsonl", `{"kind":"state","state":{"usage":{"input_tokens":1,"output_tokens":1}}}`+"\n")

	s := status(t, dir)
	require.Equal(t, "coordinating", s.Phase, "a running step blocks the end")
	require.False(t, s.Consensus)
	require.Empty(t, s.Winner)
	require.Empty(t, s.Relaunch)
	require.True(t, s.Agents["agent_a"].Running)
	require.Equal(t, "voted", s.Agents["agent_a"].State, "the state of its latest finished step")
	require.False(t, s.Agents["agent_b"].Running)

	writeStep(t, dir, "agent_a", "003", "launch.json", `{"fenced": true}`)
	s = status(t, dir)
	require.False(t, s.Agents["agent_a"].Running, "a fenced attempt is a dead step")
	require.True(t, s.Consensus)
	require.Equal(t, "agent_b", s.Winner)
}

// TestSessionStatusRevotes: a 2-2 split is re-voted max_revote_rounds
// times (counted from the stored votes), each round owed by every agent
// and shown the tally it began with; then plurality names the winner, and
// says so: consensus false, decided_by plurality.
func TestSessionStatusRevotes(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"agent_a", "agent_b", "agent_c", "agent_d"}
	answers(t, dir, ids...)
	seen := `{"agent_a":1,"agent_b":1,"agent_c":1,"agent_d":1}`
	split := map[string]string{"agent_a": "agent_a", "agent_b": "agent_a", "agent_c": "agent_c", "agent_d": "agent_c"}
	tally := map[string]int{"agent_a": 2, "agent_c": 2}
	for _, id := range ids {
		voteStep(t, dir, id, "002", split[id], seen)
	}
	for round := 1; round <= 2; round++ {
		s := status(t, dir)
		require.Equal(t, "coordinating", s.Phase, "round %d", round)
		require.False(t, s.Consensus)
		require.Equal(t, ids, s.Relaunch)
		require.NotNil(t, s.Revote)
		require.Equal(t, round, s.Revote.Round)
		require.Equal(t, 2, s.Revote.Of, "max_revote_rounds' default")
		require.Equal(t, tally, s.Revote.Tally)
		step := "00" + string(rune('2'+round))
		// Half the round is cast: the other half still owes it.
		voteStep(t, dir, "agent_a", step, "agent_a", seen)
		voteStep(t, dir, "agent_b", step, "agent_a", seen)
		s = status(t, dir)
		require.Equal(t, []string{"agent_c", "agent_d"}, s.Relaunch)
		require.Equal(t, round, s.Revote.Round)
		voteStep(t, dir, "agent_c", step, "agent_c", seen)
		voteStep(t, dir, "agent_d", step, "agent_c", seen)
	}
	s := status(t, dir)
	require.Equal(t, "done", s.Phase)
	require.False(t, s.Consensus, "a split settled by plurality is no consensus")
	require.Equal(t, "plurality", s.DecidedBy)
	require.Equal(t, "agent_a", s.Winner, "ties go to the first agent")
	require.Empty(t, s.Relaunch)
	require.Nil(t, s.Revote)

	// --config's max_revote_rounds: none → plurality at once.
	dir = t.TempDir()
	answers(t, dir, "agent_a", "agent_b")
	for _, id := range []string{"agent_a", "agent_b"} {
		voteStep(t, dir, id, "002", id, `{"agent_a":1,"agent_b":1}`)
	}
	s = status(t, dir, "--config", orchestratorConfig(t, "  max_revote_rounds: 0\n"))
	require.Equal(t, "done", s.Phase)
	require.False(t, s.Consensus, "a 1-1 tie is no consensus")
	require.Equal(t, "plurality", s.DecidedBy)
	require.Equal(t, "agent_a", s.Winner)
}

// TestSessionStatusDecomposition: every agent holding a fresh stop ends a
// decomposition session (mode from session.json, or from --config when
// the session has none), the presenter winning.
func TestSessionStatusDecomposition(t *testing.T) {
	dir := t.TempDir()
	answers(t, dir, "agent_a", "agent_b")
	seen := `{"agent_a":1,"agent_b":1}`
	writeStep(t, dir, "agent_b", "002", "stop.json", `{"agent_id":"agent_b","summary":"done","status":"complete","seen_steps":`+seen+`}`)
	cfg := orchestratorConfig(t, "  coordination_mode: decomposition\n  presenter: agent_b\n")
	s := status(t, dir, "--config", cfg)
	require.False(t, s.Consensus)
	require.Equal(t, []string{"agent_a"}, s.Relaunch)
	writeStep(t, dir, "agent_a", "002", "stop.json", `{"agent_id":"agent_a","summary":"done","status":"complete","seen_steps":`+seen+`}`)
	s = status(t, dir, "--config", cfg)
	require.Equal(t, "done", s.Phase)
	require.True(t, s.Consensus, "every agent stopped")
	require.Equal(t, "agent_b", s.Winner, "the configured presenter")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "session.json"),
		[]byte(`{"task":"t","agents":["agent_a","agent_b"],"mode":"decomposition","created_at":"2026-03-20T22:32:03Z"}`), 0o644))
	s = status(t, dir)
	require.True(t, s.Consensus)
	require.Equal(t, "agent_a", s.Winner, "the first agent presents by default")

	code, _, errs := runCLI(t, "session", "status", "--session-dir", dir, "--config", orchestratorConfig(t, "  coordination_mode: voting\n"))
	require.Equal(t, 1, code)
	require.True(t, strings.Contains(errs, `records mode "decomposition"`), errs)
}

// Found by trying to break step mode: a folder of an agent outside
// session.json's team is neither listed, counted nor relaunched (it won
// the session before), and --agents that contradict session.json are
// refused, as `conclave step` refuses them.
func TestSessionStatusKeepsToTheTeam(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "session.json"),
		[]byte(`{"task":"t","agents":["agent_a","agent_b"],"mode":"voting","created_at":"2026-03-20T22:32:03Z"}`), 0o644))
	answers(t, dir, "agent_a", "agent_b", "agent_z")
	seen := `{"agent_a":1,"agent_b":1,"agent_z":1}`
	voteStep(t, dir, "agent_a", "002", "agent_a", seen)
	voteStep(t, dir, "agent_z", "002", "agent_z", seen)
	voteStep(t, dir, "agent_b", "002", "agent_z", seen)
	code, out, errs := runCLI(t, "session", "status", "--session-dir", dir)
	require.Equal(t, 0, code, errs)
	require.Contains(t, errs, `agent "agent_z" is not in the session's team`)
	var s statusOut
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.NotEqual(t, "agent_z", s.Winner)
	require.NotContains(t, s.Agents, "agent_z")
	require.NotContains(t, s.Relaunch, "agent_z")

	for _, team := range []string{"agent_a", "agent_a,agent_b,agent_d"} {
		code, _, errs := runCLI(t, "session", "status", "--session-dir", dir, "--agents", team)
		require.Equal(t, 1, code, team)
		require.Contains(t, errs, "disagrees with the team in session.json")
	}
	code, _, errs = runCLI(t, "session", "status", "--session-dir", dir, "--agents", "agent_b,agent_a")
	require.Equal(t, 0, code, errs)
}

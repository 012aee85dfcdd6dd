package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type statusOut struct {
	Phase  string `json:"phase"`
	Agents map[string]struct {
		State            string `json:"state"`
		LatestStep       int    `json:"latest_step"`
		LatestAnswerStep int    `json:"latest_answer_step"`
		AnswerCount      int    `json:"answer_count"`
		VoteTarget       string `json:"vote_target"`
		VoteStale        bool   `json:"vote_stale"`
		Running          bool   `json:"running"`
	} `json:"agents"`
	Consensus bool           `json:"consensus"`
	DecidedBy string         `json:"decided_by"`
	Winner    string         `json:"winner"`
	Relaunch  []string       `json:"relaunch"`
	Votes     map[string]int `json:"votes"`
	Revote    *struct {
		Round  int            `json:"round"`
		Of     int            `json:"of"`
		Agents []string       `json:"agents"`
		Tally  map[string]int `json:"tally"`
	} `json:"revote"`
	Usage map[string]any `json:"usage"`
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func status(t *testing.T, dir string, flags ...string) statusOut {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"session", "status", "--session-dir", dir}, flags...)...)
	require.Equal(t, 0, code, errs)
	var s statusOut
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	require.NotNil(t, s.Relaunch, "relaunch is always a list")
	require.NotNil(t, s.Votes, "votes is always an object")
	require.Contains(t, s.Usage, "cost_usd")
	return s
}

// writeStep writes files the way MassGen's step mode (or any external tool)
// does, so the test also proves compatibility with files Conclave did not write.
func writeStep(t *testing.T, dir, agent, step, name, body string) {
	t.Helper()
	p := filepath.Join(dir, "agents", agent, step, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
}

func TestSessionStatusSeedLifecycle(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"agent_a", "agent_b", "agent_c"}

	// Round 1: all three answer.
	for _, id := range ids {
		writeStep(t, dir, id, "001", "answer.json", `{"agent_id":"`+id+`","answer":"r1","timestamp":"2026-03-20T22:32:03Z"}`)
	}
	s := status(t, dir)
	require.Equal(t, "coordinating", s.Phase)
	require.False(t, s.Consensus)
	require.Equal(t, ids, s.Relaunch)
	for _, id := range ids {
		require.Equal(t, "answered", s.Agents[id].State)
		require.Equal(t, 1, s.Agents[id].LatestAnswerStep)
	}

	// Round 2: a and b vote for b, c answers again → both votes stale.
	seen := `{"agent_a":1,"agent_b":1,"agent_c":1}`
	writeStep(t, dir, "agent_a", "002", "vote.json", `{"voter":"agent_a","target":"agent_b","reason":"thorough","seen_steps":`+seen+`}`)
	writeStep(t, dir, "agent_b", "002", "vote.json", `{"voter":"agent_b","target":"agent_b","reason":"mine","seen_steps":`+seen+`}`)
	writeStep(t, dir, "agent_c", "002", "answer.json", `{"agent_id":"agent_c","answer":"r2","timestamp":"2026-03-20T22:40:00Z"}`)
	s = status(t, dir)
	require.False(t, s.Consensus)
	require.Equal(t, "voted", s.Agents["agent_a"].State)
	require.True(t, s.Agents["agent_a"].VoteStale)
	require.True(t, s.Agents["agent_b"].VoteStale)
	require.Equal(t, "agent_b", s.Agents["agent_b"].VoteTarget)
	require.Equal(t, 2, s.Agents["agent_c"].LatestAnswerStep)
	require.Equal(t, ids, s.Relaunch)

	// Round 3: everyone votes for c having seen c's step 2.
	seen = `{"agent_a":1,"agent_b":1,"agent_c":2}`
	for _, id := range ids {
		writeStep(t, dir, id, "003", "vote.json", `{"voter":"`+id+`","target":"agent_c","reason":"best","seen_steps":`+seen+`}`)
	}
	s = status(t, dir)
	require.True(t, s.Consensus)
	require.Equal(t, "agent_c", s.Winner)
	require.Equal(t, "done", s.Phase)
	require.Empty(t, s.Relaunch)
	require.Equal(t, map[string]int{"agent_c": 3}, s.Votes)
	for _, id := range ids {
		require.Equal(t, 3, s.Agents[id].LatestStep)
		require.False(t, s.Agents[id].VoteStale)
	}
}

func TestSessionStatusErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	code, out, errs := runCLI(t, "session", "status", "--session-dir", missing)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errs, "does not exist")
	require.Contains(t, errs, missing)
	_, err := os.Stat(missing)
	require.True(t, os.IsNotExist(err), "status must not create the directory")

	code, _, errs = runCLI(t, "session", "status")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "session-dir")

	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	code, _, errs = runCLI(t, "session", "status", "--session-dir", file)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "not a directory")
}

func TestSessionStatusReportsCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	writeStep(t, dir, "agent_a", "001", "answer.json", `{"agent_id":"agent_a","answer":"x"}`)
	writeStep(t, dir, "agent_b", "001", "vote.json", `{broken`)
	code, out, errs := runCLI(t, "session", "status", "--session-dir", dir)
	require.Equal(t, 0, code)
	require.Contains(t, errs, filepath.ToSlash("agents/agent_b/001/vote.json"))
	var s statusOut
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.True(t, s.Agents["agent_b"].VoteStale)
	require.True(t, strings.Contains(strings.Join(s.Relaunch, ","), "agent_b"))
}

func TestSessionStatusAgentsFlag(t *testing.T) {
	dir := t.TempDir()
	s := status(t, dir)
	require.Empty(t, s.Relaunch, "an empty session knows no agents")

	code, out, errs := runCLI(t, "session", "status", "--session-dir", dir, "--agents", "agent_b,agent_a")
	require.Equal(t, 0, code, errs)
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.Equal(t, []string{"agent_a", "agent_b"}, s.Relaunch)
	require.Equal(t, "no_action", s.Agents["agent_a"].State)

	code, _, errs = runCLI(t, "session", "status", "--session-dir", dir, "--agents", "../evil")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "agent id")
}

// TestSessionStatusUsage sums the usage the steps' transcripts recorded;
// a step on an unpriced model makes the cost unknown rather than $0.
func TestSessionStatusUsage(t *testing.T) {
	dir := t.TempDir()
	writeStep(t, dir, "agent_a", "001", "answer.json", `{"agent_id":"agent_a","answer":"x","timestamp":"2026-03-20T22:32:03Z"}`)
	writeStep(t, dir, "agent_a", "001", "trace.jsonl", `{"kind":"state","state":{"usage":{"input_tokens":100,"output_tokens":10,"cost_usd":0.002}}}`+"\n"+`{"kind":"message","message":{"role":"user","content":"t"}}`+"\n")
	writeStep(t, dir, "agent_b", "001", "answer.json", `{"agent_id":"agent_b","answer":"y","timestamp":"2026-03-20T22:32:03Z"}`)
	writeStep(t, dir, "agent_b", "001", "trace.jsonl", `{"kind":"state","state":{"usage":{"input_tokens":50,"output_tokens":5,"cost_usd":0.001}}}`+"\n")
	code, out, errs := runCLI(t, "session", "status", "--session-dir", dir)
	require.Equal(t, 0, code, errs)
	var s struct {
		Usage map[string]any `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.EqualValues(t, 150, s.Usage["input_tokens"])
	require.EqualValues(t, 15, s.Usage["output_tokens"])
	require.InDelta(t, 0.003, s.Usage["cost_usd"], 1e-12)

	writeStep(t, dir, "agent_b", "002", "trace.jsonl", `{"kind":"state","state":{"usage":{"input_tokens":5,"output_tokens":1,"cost_usd":0,"unpriced":true}}}`+"\n")
	code, out, errs = runCLI(t, "session", "status", "--session-dir", dir)
	require.Equal(t, 0, code, errs)
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.EqualValues(t, 155, s.Usage["input_tokens"])
	require.Equal(t, true, s.Usage["unpriced"])
}

// TestSessionStatusNewSession: the documented loop starts on a session
// directory that does not exist yet; with the team named, status shows
// every agent to launch, without creating the directory.
func TestSessionStatusNewSession(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "session")
	code, out, errs := runCLI(t, "session", "status", "--session-dir", missing, "--agents", "agent_a,agent_b")
	require.Equal(t, 0, code, errs)
	var s statusOut
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	require.Equal(t, []string{"agent_a", "agent_b"}, s.Relaunch)
	require.False(t, s.Consensus)
	require.Equal(t, "no_action", s.Agents["agent_b"].State)
	_, err := os.Stat(missing)
	require.True(t, os.IsNotExist(err), "status must not create the directory")
}

// TestSessionStatusSkipVoting: without a vote round the session is done as
// soon as every agent has an answer; only agents without one are relaunched.
func TestSessionStatusSkipVoting(t *testing.T) {
	dir := t.TempDir()
	skip := func() statusOut {
		t.Helper()
		code, out, errs := runCLI(t, "session", "status", "--session-dir", dir, "--agents", "agent_a,agent_b,agent_c", "--skip-voting")
		require.Equal(t, 0, code, errs)
		var s statusOut
		require.NoError(t, json.Unmarshal([]byte(out), &s), out)
		return s
	}
	s := skip()
	require.Equal(t, []string{"agent_a", "agent_b", "agent_c"}, s.Relaunch)
	require.False(t, s.Consensus)

	writeStep(t, dir, "agent_b", "001", "answer.json", `{"agent_id":"agent_b","answer":"b","timestamp":"2026-03-20T22:32:03Z"}`)
	s = skip()
	require.Equal(t, []string{"agent_a", "agent_c"}, s.Relaunch, "an answered agent is done")
	require.False(t, s.Consensus)
	require.Equal(t, "coordinating", s.Phase)

	for _, id := range []string{"agent_a", "agent_c"} {
		writeStep(t, dir, id, "001", "answer.json", `{"agent_id":"`+id+`","answer":"x","timestamp":"2026-03-20T22:32:03Z"}`)
	}
	s = skip()
	require.True(t, s.Consensus, "every agent answered: no vote round")
	require.Equal(t, "done", s.Phase)
	require.Equal(t, "agent_a", s.Winner, "the first agent presents")
	require.Empty(t, s.Relaunch)

	s = status(t, dir)
	require.False(t, s.Consensus, "with a vote round the answers are not the end")
	require.Equal(t, []string{"agent_a", "agent_b", "agent_c"}, s.Relaunch)
}

// A session the workflow ended on its orchestrator timeout (or a cancel)
// is over, though its stored votes decide nothing: `session status`
// reports the workflow's outcome from status.json and relaunches no one,
// so an external loop stops as the workflow did. While the workflow runs
// (status.json says coordinating) the stored files are judged as usual.
func TestSessionStatusReportsTheWorkflowsEnd(t *testing.T) {
	dir := t.TempDir()
	writeStep(t, dir, "agent_a", "001", "answer.json", `{"agent_id":"agent_a","answer":"x","timestamp":"2026-03-20T22:32:03Z"}`)
	writeStep(t, dir, "agent_b", "001", "answer.json", `{"agent_id":"agent_b","answer":"y","timestamp":"2026-03-20T22:32:04Z"}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status.json"), []byte(`{"phase":"coordinating","agents":{}}`), 0o644))
	s := status(t, dir)
	require.Equal(t, "coordinating", s.Phase)
	require.ElementsMatch(t, []string{"agent_a", "agent_b"}, s.Relaunch)

	ownedByAWorkflow(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status.json"), []byte(`{"phase":"timeout","winner":"agent_a","agents":{}}`), 0o644))
	code, out, errs := runCLI(t, "session", "status", "--session-dir", dir)
	require.Equal(t, 0, code, errs)
	require.Contains(t, errs, "ended it (status.json, timeout)")
	var ended statusOut
	require.NoError(t, json.Unmarshal([]byte(out), &ended))
	require.Equal(t, "timeout", ended.Phase)
	require.Equal(t, "agent_a", ended.Winner)
	require.False(t, ended.Consensus)
	require.Empty(t, ended.Relaunch)
	require.Len(t, ended.Agents, 2, "the agents are still shown as stored")
}

// status.json is storage, which a person can edit: it ends the session only
// for a session a workflow owns, and only when it matches the stored files.
// Otherwise it is ignored with a warning naming why, and the stored files
// are judged as in step mode (relaunch is not emptied).
func TestSessionStatusIgnoresAStatusThatDoesNotMatch(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		owned        bool
		want         string
	}{
		{"no workflow owns the session", `{"phase":"done","winner":"agent_a"}`, false, "no Coordination workflow owns this session"},
		{"an owner without ids", `{"phase":"done","winner":"agent_a"}`, true, "no Coordination workflow owns this session"},
		{"a winner outside the team", `{"phase":"done","winner":"mallory"}`, true, `its winner "mallory" is not an agent of the session`},
		{"a winner without an answer", `{"phase":"timeout","winner":"agent_c"}`, true, "its winner agent_c has no stored answer"},
		{"no winner for done", `{"phase":"done"}`, true, "it names no winner"},
		{"an escape in the winner", `{"phase":"done","winner":"\u001b[2J../.."}`, true, "is not an agent of the session"},
		{"an unknown decided_by", `{"phase":"done","winner":"agent_a","decided_by":"fiat"}`, true, `decided_by "fiat"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeStep(t, dir, "agent_a", "001", "answer.json", `{"agent_id":"agent_a","answer":"x","timestamp":"2026-03-20T22:32:03Z"}`)
			writeStep(t, dir, "agent_b", "001", "answer.json", `{"agent_id":"agent_b","answer":"y","timestamp":"2026-03-20T22:32:04Z"}`)
			writeStep(t, dir, "agent_c", "001", "vote.json", `{"voter":"agent_c","target":"agent_a","reason":"r","timestamp":"2026-03-20T22:32:05Z"}`)
			switch {
			case tc.name == "an owner without ids":
				require.NoError(t, os.WriteFile(filepath.Join(dir, "owner.json"), []byte(`{}`), 0o644))
			case tc.owned:
				ownedByAWorkflow(t, dir)
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, "status.json"), []byte(tc.status), 0o644))
			code, out, errs := runCLI(t, "session", "status", "--session-dir", dir)
			require.Equal(t, 0, code, errs)
			require.Contains(t, errs, tc.want)
			require.NotContains(t, errs, "\x1b")
			var s statusOut
			require.NoError(t, json.Unmarshal([]byte(out), &s))
			require.Equal(t, "coordinating", s.Phase)
			require.NotEmpty(t, s.Relaunch)
		})
	}
}

// A decomposition session the workflow ended names its presenter, which
// need not have an answer of its own: session status believes it.
func TestSessionStatusBelievesADecompositionPresenterWithoutAnswer(t *testing.T) {
	dir := t.TempDir()
	writeStep(t, dir, "agent_a", "001", "stop.json", `{"agent_id":"agent_a","summary":"nothing to add","status":"complete","seen_steps":{"agent_b":1},"timestamp":"2026-03-20T22:32:05Z"}`)
	writeStep(t, dir, "agent_b", "001", "answer.json", `{"agent_id":"agent_b","answer":"part B","timestamp":"2026-03-20T22:32:04Z"}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "session.json"), []byte(`{"agents":["agent_a","agent_b"],"mode":"decomposition"}`), 0o644))
	ownedByAWorkflow(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status.json"), []byte(`{"phase":"done","winner":"agent_a","consensus":true,"decided_by":"consensus"}`), 0o644))
	code, out, errs := runCLI(t, "session", "status", "--session-dir", dir)
	require.Equal(t, 0, code, errs)
	require.NotContains(t, errs, "ignored")
	var s statusOut
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.Equal(t, "done", s.Phase)
	require.Equal(t, "agent_a", s.Winner)
}

// Only the workflow knows whom it dropped: session status on a session it
// ended shows those agents failed, with the reason, as status.json does.
func TestSessionStatusShowsTheAgentsTheWorkflowDropped(t *testing.T) {
	dir := t.TempDir()
	writeStep(t, dir, "agent_a", "001", "answer.json", `{"agent_id":"agent_a","answer":"x","timestamp":"2026-03-20T22:32:03Z"}`)
	writeStep(t, dir, "agent_a", "002", "vote.json", `{"voter":"agent_a","target":"agent_a","reason":"r","seen_steps":{"agent_a":1},"timestamp":"2026-03-20T22:32:05Z"}`)
	writeStep(t, dir, "agent_b", "001", "launch.json", `{"launch":"2","fenced":true,"reason":"TurnEnded"}`)
	ownedByAWorkflow(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status.json"), []byte(`{"phase":"done","winner":"agent_a","consensus":true,"decided_by":"consensus",`+
		`"agents":{"agent_b":{"state":"failed","fail_reason":"step 3: 3 steps in a row ended by the round timeout","given_up_step":3}}}`), 0o644))
	code, out, errs := runCLI(t, "session", "status", "--session-dir", dir, "--agents", "agent_a,agent_b")
	require.Equal(t, 0, code, errs)
	var s struct {
		Agents map[string]struct {
			State       string `json:"state"`
			FailReason  string `json:"fail_reason"`
			GivenUpStep int    `json:"given_up_step"`
		} `json:"agents"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	require.Equal(t, "failed", s.Agents["agent_b"].State)
	require.Contains(t, s.Agents["agent_b"].FailReason, "round timeout")
	require.Equal(t, 3, s.Agents["agent_b"].GivenUpStep)
}

// ownedByAWorkflow writes the owner.json a Coordination workflow creates
// for its session.
func ownedByAWorkflow(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "owner.json"), []byte(`{"workflow_id":"s-1","first_run_id":"r","inputs_hash":"sha256:x"}`), 0o644))
}

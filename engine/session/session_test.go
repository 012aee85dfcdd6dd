package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/storage"
)

var t0 = time.Date(2026, 3, 20, 22, 32, 3, 0, time.UTC)

func newStore(t *testing.T) (storage.Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := storage.NewLocal(dir)
	require.NoError(t, err)
	return st, dir
}

func answer(agent, text string) StepOutput {
	return StepOutput{Agent: agent, Action: coord.ActionNewAnswer, Answer: text, Now: t0}
}

func vote(agent, target string, seen map[string]int) StepOutput {
	return StepOutput{Agent: agent, Action: coord.ActionVote, Target: target, Reason: "better", SeenSteps: seen, Now: t0}
}

func save(t *testing.T, st storage.Store, out StepOutput) Saved {
	t.Helper()
	s, err := Save(context.Background(), st, out)
	require.NoError(t, err)
	return s
}

func load(t *testing.T, st storage.Store) *Snapshot {
	t.Helper()
	snap, err := Load(context.Background(), st)
	require.NoError(t, err)
	return snap
}

func TestSaveNumbersStepsAndWritesSeedFields(t *testing.T) {
	st, dir := newStore(t)
	s1 := save(t, st, answer("agent_a", "first"))
	s2 := save(t, st, vote("agent_a", "agent_a", map[string]int{"agent_a": 1}))
	require.Equal(t, 1, s1.Step)
	require.Equal(t, 2, s2.Step)
	require.FileExists(t, filepath.Join(dir, "agents/agent_a/001/answer.json"))
	require.FileExists(t, filepath.Join(dir, "agents/agent_a/002/vote.json"))

	var ans map[string]any
	readFile(t, filepath.Join(dir, "agents/agent_a/001/answer.json"), &ans)
	require.Equal(t, map[string]any{"agent_id": "agent_a", "answer": "first", "timestamp": "2026-03-20T22:32:03.000000Z"}, ans)

	var v map[string]any
	readFile(t, filepath.Join(dir, "agents/agent_a/002/vote.json"), &v)
	require.Equal(t, "agent_a", v["voter"])
	require.Equal(t, "agent_a", v["target"])
	require.Equal(t, map[string]any{"agent_a": float64(1)}, v["seen_steps"])

	var last map[string]any
	readFile(t, filepath.Join(dir, "agents/agent_a/last_action.json"), &last)
	for _, k := range []string{"agent_id", "action", "answer_text", "vote_target", "vote_reason", "timestamp", "step_number", "duration_seconds", "cost", "workspace_path"} {
		require.Contains(t, last, k)
	}
	require.Equal(t, "vote", last["action"])
	require.Nil(t, last["answer_text"])
	require.Equal(t, float64(2), last["step_number"])
}

func TestSaveCopiesWorkspaceAndRewritesPaths(t *testing.T) {
	st, dir := newStore(t)
	ws := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "site"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "site", "index.html"), []byte("<h1>Beatles</h1>"), 0o644))
	out := answer("agent_b", "See "+ws+"/site/index.html for the page.")
	out.WorkspaceDir = ws
	s := save(t, st, out)

	stored := filepath.Join(dir, "agents/agent_b/001/workspace")
	require.Equal(t, stored, s.Workspace)
	require.FileExists(t, filepath.Join(stored, "site/index.html"))
	require.Equal(t, "See "+stored+"/site/index.html for the page.", s.Answer)
	require.NotContains(t, s.Answer, ws)

	snap := load(t, st)
	a, ok := snap.Agent("agent_b")
	require.True(t, ok)
	require.Equal(t, "agents/agent_b/001/workspace/", a.Latest().Workspace)
	require.Equal(t, s.Answer, a.Latest().Text)

	var last LastAction
	readFile(t, filepath.Join(dir, "agents/agent_b/last_action.json"), &last)
	require.NotNil(t, last.WorkspacePath)
	require.Equal(t, stored, *last.WorkspacePath)
}

func TestLoadSnapshot(t *testing.T) {
	st, _ := newStore(t)
	save(t, st, answer("agent_b", "b1"))
	save(t, st, answer("agent_a", "a1"))
	save(t, st, answer("agent_a", "a2"))
	save(t, st, vote("agent_b", "agent_a", map[string]int{"agent_a": 2, "agent_b": 1}))

	snap := load(t, st)
	require.Empty(t, snap.Problems)
	require.Len(t, snap.Agents, 2)
	require.Equal(t, "agent_a", snap.Agents[0].ID, "agents sorted by id without session.json")
	a := snap.Agents[0]
	require.Equal(t, 2, a.LatestStep)
	require.Equal(t, 2, a.LatestAnswerStep)
	require.Equal(t, 2, a.AnswerCount)
	require.Equal(t, "a2", a.Latest().Text)
	require.Equal(t, 2, a.Latest().Revision)
	b := snap.Agents[1]
	require.Equal(t, 2, b.LatestStep)
	require.Equal(t, 1, b.LatestAnswerStep)
	require.Equal(t, coord.ActionVote, b.LastAction)
	require.Equal(t, "agent_a", b.Vote.Target)
	require.Equal(t, map[string]int{"agent_a": 2, "agent_b": 1}, b.Vote.SeenSteps)
}

func TestLoadFollowsSessionInfoOrder(t *testing.T) {
	st, _ := newStore(t)
	require.NoError(t, WriteJSON(context.Background(), st, InfoKey, Info{Task: "t", Agents: []string{"zed", "amy"}}))
	save(t, st, answer("amy", "x"))
	snap := load(t, st)
	require.Equal(t, "zed", snap.Agents[0].ID)
	require.Equal(t, 0, snap.Agents[0].LatestStep, "an agent with no files is no_action")
	require.Equal(t, "amy", snap.Agents[1].ID)
}

func TestFolderWithAnswerAndVoteCountsAsAnswer(t *testing.T) {
	st, dir := newStore(t)
	save(t, st, answer("agent_a", "a1"))
	writeRaw(t, dir, "agents/agent_a/001/vote.json", `{"voter":"agent_a","target":"agent_a","seen_steps":{"agent_a":1}}`)
	a := load(t, st).Agents[0]
	require.Equal(t, coord.ActionNewAnswer, a.LastAction)
	require.Nil(t, a.Vote)
	require.Equal(t, 1, a.AnswerCount)
}

func TestCorruptFilesAreReportedNotFatal(t *testing.T) {
	st, dir := newStore(t)
	save(t, st, answer("agent_a", "a1"))
	save(t, st, answer("agent_b", "b1"))
	writeRaw(t, dir, "agents/agent_a/002/vote.json", `{"voter": "agent_a", "target": `)
	writeRaw(t, dir, "agents/agent_b/002/answer.json", `not json`)
	writeRaw(t, dir, "agents/agent_b/notes/readme.txt", `stray`)
	writeRaw(t, dir, "agents/Bad!/001/answer.json", `{}`)
	writeRaw(t, dir, InfoKey, `{"task": 3}`)

	snap := load(t, st)
	var keys []string
	for _, p := range snap.Problems {
		keys = append(keys, p.Key)
		require.NotEmpty(t, p.Reason)
	}
	require.ElementsMatch(t, []string{
		InfoKey,
		"agents/agent_a/002/vote.json",
		"agents/agent_b/002/answer.json",
		"agents/agent_b/notes/readme.txt",
		"agents/Bad!/001/answer.json",
	}, keys)

	a, _ := snap.Agent("agent_a")
	require.Equal(t, coord.ActionVote, a.LastAction)
	require.True(t, a.Vote.Invalid, "an unreadable vote is kept as an invalid (stale) vote")
	b, _ := snap.Agent("agent_b")
	require.Equal(t, 1, b.LatestStep, "a corrupt answer is not a step")
	require.Equal(t, "b1", b.Latest().Text)

	// The corrupt files are untouched by loading.
	data, err := os.ReadFile(filepath.Join(dir, "agents/agent_b/002/answer.json"))
	require.NoError(t, err)
	require.Equal(t, "not json", string(data))
}

func TestUnfinishedStepFolderIsReused(t *testing.T) {
	st, dir := newStore(t)
	save(t, st, answer("agent_a", "a1"))
	// A crash after copying the workspace but before answer.json.
	writeRaw(t, dir, "agents/agent_a/002/workspace/partial.txt", "half")
	s := save(t, st, answer("agent_a", "a2"))
	require.Equal(t, 2, s.Step)
	require.NoFileExists(t, filepath.Join(dir, "agents/agent_a/002/workspace/partial.txt"))
	require.Equal(t, 2, load(t, st).Agents[0].AnswerCount)
}

func TestSaveRejectsBadInput(t *testing.T) {
	st, dir := newStore(t)
	cases := []struct {
		name string
		out  StepOutput
		want string
	}{
		{"bad agent id", StepOutput{Agent: "../x", Action: coord.ActionNewAnswer, Now: t0}, "agent id"},
		{"slash in id", StepOutput{Agent: "a/b", Action: coord.ActionNewAnswer, Now: t0}, "agent id"},
		{"no action", StepOutput{Agent: "agent_a", Now: t0}, "unknown action"},
		{"vote without target", StepOutput{Agent: "agent_a", Action: coord.ActionVote, Now: t0}, "no target"},
		{"vote target escapes", StepOutput{Agent: "agent_a", Action: coord.ActionVote, Target: "../../etc", Now: t0}, "agent id"},
		{"stop bad status", StepOutput{Agent: "agent_a", Action: coord.ActionStop, StopStatus: "done", Now: t0}, "complete or blocked"},
		{"no time", StepOutput{Agent: "agent_a", Action: coord.ActionNewAnswer}, "timestamp"},
		{"negative step", StepOutput{Agent: "agent_a", Action: coord.ActionNewAnswer, Step: -1, Now: t0}, "negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Save(context.Background(), st, c.out)
			require.ErrorContains(t, err, c.want)
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing stored after refused saves")
}

// TestSeedLifecycle walks seed 000's three rounds through files and rules.
func TestSeedLifecycle(t *testing.T) {
	st, _ := newStore(t)
	ids := []string{"agent_a", "agent_b", "agent_c"}
	status := func() coord.Status {
		l := load(t, st).Ledger()
		return coord.Summarize(l, coord.Judge(l, coord.VerdictOptions{Rule: coord.RuleMajority}, 0), "coordinating")
	}

	for _, id := range ids {
		save(t, st, answer(id, "round 1 by "+id))
	}
	s := status()
	require.Equal(t, ids, s.Relaunch)
	require.False(t, s.Consensus)
	for _, id := range ids {
		require.Equal(t, "answered", string(s.Agents[id].State))
	}

	seen := map[string]int{"agent_a": 1, "agent_b": 1, "agent_c": 1}
	save(t, st, vote("agent_a", "agent_b", seen))
	save(t, st, vote("agent_b", "agent_b", seen))
	save(t, st, answer("agent_c", "round 2 by agent_c"))
	s = status()
	require.True(t, s.Agents["agent_a"].VoteStale)
	require.True(t, s.Agents["agent_b"].VoteStale)
	require.Equal(t, ids, s.Relaunch)
	require.False(t, s.Consensus)

	seen = map[string]int{"agent_a": 1, "agent_b": 1, "agent_c": 2}
	for _, id := range ids {
		save(t, st, vote(id, "agent_c", seen))
	}
	s = status()
	require.True(t, s.Consensus)
	require.Equal(t, "agent_c", s.Winner)
	require.Empty(t, s.Relaunch)
	require.Equal(t, 3, s.Votes["agent_c"])
}

func readFile(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v))
}

func writeRaw(t *testing.T, dir, key, data string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(key))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	require.False(t, strings.Contains(key, ".."))
}

// Two answers stored within one second keep their order: the mid-stream
// injection cap delivers the newest source first by these timestamps, and
// whole seconds tied (the older revision was injected).
func TestTimestampsOrderAnswersWithinASecond(t *testing.T) {
	st, _ := newStore(t)
	older, newer := answer("agent_b", "B2"), answer("agent_c", "C2")
	older.Now, newer.Now = t0.Add(100*time.Millisecond), t0.Add(450*time.Millisecond)
	save(t, st, newer)
	save(t, st, older)
	snap, err := Load(context.Background(), st)
	require.NoError(t, err)
	b, _ := snap.Agent("agent_b")
	c, _ := snap.Agent("agent_c")
	tb, err := time.Parse(time.RFC3339Nano, b.Latest().Timestamp)
	require.NoError(t, err)
	tc, err := time.Parse(time.RFC3339Nano, c.Latest().Timestamp)
	require.NoError(t, err)
	require.True(t, tc.After(tb), "%s after %s", c.Latest().Timestamp, b.Latest().Timestamp)
}

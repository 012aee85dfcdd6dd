package coord

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// storedSplit is a 2-2 split of four agents, each of which voted rounds+1
// times on the same answers (rounds re-votes), the last time as votes[i].
type storedSplit struct {
	l       Ledger
	history map[string][]Cast
}

func newStoredSplit() *storedSplit {
	s := &storedSplit{history: map[string][]Cast{}}
	for _, id := range []string{"a", "b", "c", "d"} {
		s.l.Agents = append(s.l.Agents, Agent{ID: id, LatestStep: 1, LatestAnswerStep: 1, AnswerCount: 1, LastAction: ActionNewAnswer})
		s.history[id] = []Cast{{Step: 1, Action: ActionNewAnswer}}
	}
	return s
}

var allSeen = map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}

func (s *storedSplit) vote(id, target string) *storedSplit {
	a := s.l.Find(id)
	a.LatestStep++
	a.LastAction = ActionVote
	a.Vote = &Vote{Voter: id, Target: target, SeenSteps: allSeen, Step: a.LatestStep}
	s.history[id] = append(s.history[id], Cast{Step: a.LatestStep, Action: ActionVote, Target: target, SeenSteps: allSeen})
	return s
}

// TestJudgeStored: a split in a stored session goes through
// max_revote_rounds re-votes counted from the files, each owed by every
// alive agent and shown the tally of the round's start, then plurality.
func TestJudgeStored(t *testing.T) {
	o := VerdictOptions{Rule: RuleMajority, MaxRevoteRounds: 2}
	s := newStoredSplit().vote("a", "a").vote("b", "a").vote("c", "c").vote("d", "c")
	tally := map[string]int{"a": 2, "c": 2}

	v, call := JudgeStored(s.l, o, s.history)
	require.True(t, v.Revote, v.Reason)
	require.Equal(t, &RevoteCall{Round: 1, Of: 2, Agents: []string{"a", "b", "c", "d"}, Tally: tally}, call)

	// Half of the first re-vote is cast (b switches to c): the others still owe it,
	// shown the tally the round started with.
	s.vote("a", "a").vote("b", "c")
	v, call = JudgeStored(s.l, o, s.history)
	require.True(t, v.Revote, v.Reason)
	require.Equal(t, &RevoteCall{Round: 1, Of: 2, Agents: []string{"c", "d"}, Tally: tally}, call)
	s.l.Find("c").Running = true
	_, call = JudgeStored(s.l, o, s.history)
	require.Equal(t, []string{"d"}, call.Agents, "a running agent is busy")
	s.l.Find("c").Running = false

	s.vote("c", "a").vote("d", "c") // a 2-2 split again: a, c | b, d
	v, call = JudgeStored(s.l, o, s.history)
	require.True(t, v.Revote, v.Reason)
	require.Equal(t, 2, call.Round)
	require.Equal(t, []string{"a", "b", "c", "d"}, call.Agents)

	s.vote("a", "a").vote("b", "c").vote("c", "a").vote("d", "c")
	v, call = JudgeStored(s.l, o, s.history)
	require.Nil(t, call)
	require.Equal(t, Verdict{Done: true, Status: StatusPlurality, Winner: "a", Reason: v.Reason}, v,
		"re-votes used up: plurality, ties to configuration order")

	o.MaxRevoteRounds = 0
	v, _ = JudgeStored(newStoredSplit().vote("a", "a").vote("b", "a").vote("c", "c").vote("d", "c").l, o, nil)
	require.Equal(t, StatusPlurality, v.Status, "no re-votes configured")
}

func TestRevotes(t *testing.T) {
	seen1, seen2 := map[string]int{"a": 1}, map[string]int{"a": 2}
	vote := func(seen map[string]int) Cast { return Cast{Action: ActionVote, Target: "a", SeenSteps: seen} }
	for _, c := range []struct {
		name    string
		history []Cast
		want    int
	}{
		{"none", nil, 0},
		{"answer last", []Cast{vote(seen1), {Action: ActionNewAnswer}}, 0},
		{"one vote", []Cast{{Action: ActionNewAnswer}, vote(seen1)}, 1},
		{"stale vote recast", []Cast{vote(seen1), vote(seen2)}, 1},
		{"two re-votes", []Cast{vote(seen1), vote(seen2), vote(seen2), vote(seen2)}, 3},
		{"invalid vote breaks the chain", []Cast{vote(seen2), {Action: ActionVote, Invalid: true}, vote(seen2)}, 1},
	} {
		t.Run(c.name, func(t *testing.T) { require.Len(t, Revotes(c.history), c.want) })
	}
}

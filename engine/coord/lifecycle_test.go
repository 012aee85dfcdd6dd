package coord

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSeedLifecycle walks seed 000's "Session Lifecycle (3 agents)" round by
// round, checking the external orchestrator's view after each round.
func TestSeedLifecycle(t *testing.T) {
	s := newSim("agent_a", "agent_b", "agent_c")
	round1Seen := map[string]int{"agent_a": 1, "agent_b": 1, "agent_c": 1}
	round2Seen := map[string]int{"agent_a": 1, "agent_b": 1, "agent_c": 2}

	rounds := []struct {
		name      string
		act       func()
		states    []AgentState
		stale     []bool
		relaunch  []string
		votes     map[string]int
		consensus bool
		winner    string
	}{
		{
			name: "round 1: initial answers",
			act: func() {
				s.answer("agent_a").answer("agent_b").answer("agent_c")
			},
			states:   []AgentState{StateAnswered, StateAnswered, StateAnswered},
			stale:    []bool{false, false, false},
			relaunch: []string{"agent_a", "agent_b", "agent_c"},
			votes:    map[string]int{},
		},
		{
			name: "round 2: agent_c answers again, so both votes are stale",
			act: func() {
				// All three decide having seen round 1; agent_c's new answer
				// lands at its step 2, after a and b saw step 1.
				s.voteSeen("agent_a", "agent_b", round1Seen)
				s.voteSeen("agent_b", "agent_b", round1Seen)
				s.answer("agent_c")
			},
			states:   []AgentState{StateVoted, StateVoted, StateAnswered},
			stale:    []bool{true, true, false},
			relaunch: []string{"agent_a", "agent_b", "agent_c"},
			votes:    map[string]int{},
		},
		{
			name: "round 3: fresh unanimous votes for agent_c",
			act: func() {
				s.voteSeen("agent_a", "agent_c", round2Seen)
				s.voteSeen("agent_b", "agent_c", round2Seen)
				s.voteSeen("agent_c", "agent_c", round2Seen)
			},
			states:    []AgentState{StateVoted, StateVoted, StateVoted},
			stale:     []bool{false, false, false},
			relaunch:  []string{},
			votes:     map[string]int{"agent_c": 3},
			consensus: true,
			winner:    "agent_c",
		},
	}
	for _, r := range rounds {
		t.Run(r.name, func(t *testing.T) {
			r.act()
			l := s.ledger()
			for i, a := range l.Agents {
				assert.Equal(t, r.states[i], StateOf(a), a.ID)
				if a.LastAction == ActionVote {
					assert.Equal(t, r.stale[i], Stale(l, a.Vote), a.ID)
				}
			}
			assert.Equal(t, r.relaunch, Relaunch(l))
			assert.Equal(t, r.votes, Tally(l))
			o := Decide(l, RuleMajority)
			assert.Equal(t, r.consensus, o.Reached, o.Reason)
			assert.Equal(t, r.winner, o.Winner)
			assert.False(t, o.Split)
		})
	}

	st := Summarize(s.ledger(), verdictOf(Decide(s.ledger(), RuleMajority)), PhaseDone)
	got, err := json.Marshal(st)
	require.NoError(t, err)
	assert.JSONEq(t, `{
		"phase": "done",
		"agents": {
			"agent_a": {"state": "voted", "latest_step": 3, "latest_answer_step": 1,
				"answer_count": 1, "vote_target": "agent_c", "vote_stale": false},
			"agent_b": {"state": "voted", "latest_step": 3, "latest_answer_step": 1,
				"answer_count": 1, "vote_target": "agent_c", "vote_stale": false},
			"agent_c": {"state": "voted", "latest_step": 3, "latest_answer_step": 2,
				"answer_count": 2, "vote_target": "agent_c", "vote_stale": false}
		},
		"consensus": true, "decided_by": "consensus", "winner": "agent_c", "relaunch": [],
		"votes": {"agent_c": 3},
		"usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0}
	}`, string(got))
}

package coord

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarizeEmptyNeverNull(t *testing.T) {
	got, err := json.Marshal(Summarize(Ledger{}, Verdict{}, PhaseCoordinating))
	require.NoError(t, err)
	assert.JSONEq(t, `{"phase": "coordinating", "agents": {}, "consensus": false, "winner": "",
		"relaunch": [], "votes": {},
		"usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0}}`, string(got))
}

func TestSummarize(t *testing.T) {
	l := newSim("agent_a", "agent_b", "agent_c", "agent_d").
		answer("agent_a").answer("agent_b").
		vote("agent_a", "agent_b").
		vote("agent_b", "agent_b").answer("agent_a"). // agent_b's vote is now stale
		missingVote("agent_c").
		fail("agent_d").
		run("agent_a").
		ledger()
	st := Summarize(l, verdictOf(Decide(l, RuleMajority)), PhaseCoordinating)
	st.Usage = Usage{InputTokens: 1200, OutputTokens: 300, CostUSD: 0.25}
	got, err := json.Marshal(st)
	require.NoError(t, err)
	assert.JSONEq(t, `{
		"phase": "coordinating",
		"agents": {
			"agent_a": {"state": "answered", "latest_step": 3, "latest_answer_step": 3,
				"answer_count": 2, "vote_target": "", "vote_stale": false, "running": true},
			"agent_b": {"state": "voted", "latest_step": 2, "latest_answer_step": 1,
				"answer_count": 1, "vote_target": "agent_b", "vote_stale": true},
			"agent_c": {"state": "voted", "latest_step": 1, "latest_answer_step": 0,
				"answer_count": 0, "vote_target": "", "vote_stale": true},
			"agent_d": {"state": "failed", "latest_step": 0, "latest_answer_step": 0,
				"answer_count": 0, "vote_target": "", "vote_stale": false}
		},
		"consensus": false, "winner": "", "relaunch": ["agent_b", "agent_c"], "votes": {},
		"usage": {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.25}
	}`, string(got))
}

// TestSummarizePluralityWinner: a winner named by plurality is reported
// as such, never as a consensus (a 1-1 tie included); an agreement is.
func TestSummarizePluralityWinner(t *testing.T) {
	tie := newSim("a", "b").answer("a").answer("b").vote("a", "a").vote("b", "b").ledger()
	v := Judge(tie, VerdictOptions{Rule: RuleMajority}, 0)
	require.Equal(t, StatusPlurality, v.Status)
	st := Summarize(tie, v, PhaseDone)
	assert.False(t, st.Consensus, "a 1-1 tie is no consensus")
	assert.Equal(t, "plurality", st.DecidedBy)
	assert.Equal(t, "a", st.Winner)
	agree := newSim("a", "b").answer("a").answer("b").vote("a", "b").vote("b", "b").ledger()
	st = Summarize(agree, Judge(agree, VerdictOptions{Rule: RuleMajority}, 0), PhaseDone)
	assert.True(t, st.Consensus)
	assert.Equal(t, "consensus", st.DecidedBy)

	l := threeAnswered().vote("c", "b").vote("a", "a").vote("b", "c").ledger()
	assert.Equal(t, "", Summarize(l, verdictOf(Decide(l, RuleMajority)), PhaseCoordinating).Winner)
	st = Summarize(l, verdictOf(Decide(l, RulePlurality)), PhasePresenting)
	assert.False(t, st.Consensus, "a tie settled by plurality is no consensus")
	assert.Equal(t, StatusPlurality, st.DecidedBy)
	assert.Equal(t, "c", st.Winner)
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, st.Votes)
}

package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// Sessions without a vote round (skip_voting, the quick synthesize path)
// end as soon as every alive agent has answered: no agent is launched to
// vote, and the presenter synthesizes all answers, told that nobody voted.
// Only the first steps are scripted: any other launch would fail its agent.
func TestNoVoteRound(t *testing.T) {
	one := 1
	quick := func(o *config.Orchestrator) {
		o.DisableInjection, o.MaxNewAnswersPerAgent, o.FinalAnswerStrategy = true, &one, config.FinalSynthesize
	}
	tests := []struct {
		name string
		set  func(o *config.Orchestrator)
		// failC fails c's first step; otherwise a, c and b answer at 1,
		// 2 and 3 minutes.
		failC     bool
		presenter string
		strategy  config.FinalAnswerStrategy
	}{
		{name: "quick synthesize", set: quick, presenter: a, strategy: config.FinalSynthesize},
		{name: "quick synthesize in rounds", set: func(o *config.Orchestrator) { quick(o); o.Scheduling = config.SchedulingRounds },
			presenter: a, strategy: config.FinalSynthesize},
		{name: "skip_voting synthesizes by default", set: func(o *config.Orchestrator) { o.SkipVoting = true },
			presenter: a, strategy: config.FinalSynthesize},
		{name: "skip_voting with the configured presenter", set: func(o *config.Orchestrator) { o.SkipVoting, o.Presenter = true, b },
			presenter: b, strategy: config.FinalSynthesize},
		{name: "skip_voting with winner_reuse (skip_final_presentation)", set: func(o *config.Orchestrator) {
			o.SkipVoting, o.FinalAnswerStrategy = true, config.FinalWinnerReuse
		}, presenter: a, strategy: config.FinalWinnerReuse},
		{name: "a failed agent is not waited for", set: func(o *config.Orchestrator) { o.SkipVoting = true },
			failC: true, presenter: a, strategy: config.FinalSynthesize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := map[stepKey]scripted{{a, 1}: answer(time.Minute), {b, 1}: answer(3 * time.Minute), {c, 1}: answer(2 * time.Minute)}
			if tt.failC {
				script[stepKey{c, 1}] = fail(temporal.NewNonRetryableApplicationError("model gone", "ModelRejected", nil))
			}
			h := newHarness(t, script)
			cfg := testConfig(a, b, c)
			tt.set(&cfg.Orchestrator)
			h.run(input(cfg))

			r := h.result()
			require.Equal(t, coord.StatusConsensus, r.Status)
			require.Equal(t, tt.presenter, r.Winner)
			require.Empty(t, r.Votes)
			require.ElementsMatch(t, []string{"agent_a:1", "agent_b:1", "agent_c:1"}, pairs(h.launched()), "nobody is launched to vote")
			require.Equal(t, 3*time.Minute, h.env.Now().Sub(h.start), "done with the last answer")
			require.Len(t, h.presents, 1)
			p := h.presents[0]
			require.Equal(t, tt.presenter, p.Presenter)
			require.Equal(t, string(tt.strategy), p.Strategy)
			require.True(t, p.NoVote)

			require.Equal(t, coord.PhaseDone, h.lastStatus().Phase)
			require.True(t, h.lastStatus().Consensus)
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, s := range h.statuses {
				for _, id := range s.Relaunch {
					require.Zero(t, s.Agents[id].AnswerCount, "status.json relaunches only agents without an answer: %+v", s)
				}
			}
		})
	}
}

// MassGen's ensemble pattern is the quick synthesize settings plus
// defer_voting_until_all_answered: the agents vote once all have answered,
// and the presenter is the winner, not told that nobody voted.
func TestEnsemblePatternVotes(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(3 * time.Minute),
		{a, 2}: vote(b, time.Minute, seen), {b, 2}: vote(b, time.Minute, seen),
	})
	cfg := testConfig(a, b)
	o := &cfg.Orchestrator
	o.DisableInjection, o.MaxNewAnswersPerAgent, o.FinalAnswerStrategy = true, ptr(1), config.FinalSynthesize
	o.DeferVotingUntilAllAnswered = true
	h.run(input(cfg))

	r := h.result()
	require.Equal(t, b, r.Winner)
	require.Equal(t, map[string]int{b: 2}, r.Votes)
	require.Len(t, h.presents, 1)
	require.Equal(t, string(config.FinalSynthesize), h.presents[0].Strategy)
	require.False(t, h.presents[0].NoVote)
}

// An agent without an answer that may not give one any more (the global
// cap is reached) is not launched to vote: the session is decided as a
// stall, presented by the presenter that has an answer.
func TestNoVoteRoundStall(t *testing.T) {
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute),
		{c, 1}: vote(a, 3*time.Minute, map[string]int{a: 1, b: 1}), // ended without an answer
	})
	cfg := testConfig(a, b, c)
	cfg.Orchestrator.SkipVoting = true
	cfg.Orchestrator.MaxNewAnswersGlobal = ptr(2)
	cfg.Orchestrator.Presenter = c
	h.run(input(cfg))

	r := h.result()
	require.Equal(t, coord.StatusPlurality, r.Status)
	require.Equal(t, a, r.Winner, "the configured presenter has no answer")
	require.Len(t, h.launched(), 3, "c is not launched again")
	require.Equal(t, string(config.FinalSynthesize), h.presents[0].Strategy)
	require.True(t, h.presents[0].NoVote)
}

// skip_final_presentation (final_answer_strategy winner_reuse) in voting
// mode: the vote winner's stored answer is the final one, no model call.
func TestSkipFinalPresentationVoting(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute),
		{a, 2}: vote(b, time.Minute, seen), {b, 2}: vote(b, time.Minute, seen),
	})
	cfg, _, err := config.ParseWithWarnings([]byte(
		"agents: [{id: agent_a, backend: {model: m}}, {id: agent_b, backend: {model: m}}]\n"+
			"orchestrator: {skip_final_presentation: true}\n"), "c.yaml")
	require.NoError(t, err)
	h.run(input(*cfg))

	r := h.result()
	require.Equal(t, b, r.Winner)
	require.Len(t, h.presents, 1)
	require.Equal(t, b, h.presents[0].Presenter)
	require.Equal(t, string(config.FinalWinnerReuse), h.presents[0].Strategy)
	require.False(t, h.presents[0].NoVote)
}

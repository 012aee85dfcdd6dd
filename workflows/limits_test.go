package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// Seed 001, decomposition mode: reaching max_new_answers_per_agent (a
// streak of answers without news from peers) or max_new_answers_global
// stops the agent automatically, with status complete and a summary naming
// the limit, instead of launching it again and again.
func TestDecompositionLimitsStopAutomatically(t *testing.T) {
	for _, tc := range []struct {
		name         string
		edit         func(o *config.Orchestrator)
		answers      int // agent_a's answers
		autoStopStep int
		summary      string
	}{
		{"per-agent streak", func(o *config.Orchestrator) { o.MaxNewAnswersPerAgent = ptr(2) }, 2, 3,
			"stopped automatically: max_new_answers_per_agent (2) reached: 2 answers in a row without news from peers"},
		{"global", func(o *config.Orchestrator) { o.MaxNewAnswersGlobal = ptr(1) }, 1, 2,
			"stopped automatically: max_new_answers_global (1) reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := map[stepKey]scripted{
				// agent_b is slow and only stops; agent_a would answer on
				// and on if it were asked.
				{b, 1}: stop(10*time.Minute, nil),
				{b, 2}: stop(time.Minute, nil),
				{a, 7}: stop(time.Minute, nil),
			}
			for s := 1; s <= 6; s++ {
				script[stepKey{a, s}] = answer(time.Minute)
			}
			h := newHarness(t, script)
			cfg := testConfig(a, b)
			cfg.Orchestrator.CoordinationMode = config.ModeDecomposition
			cfg.Orchestrator.MaxNewAnswersPerAgent, cfg.Orchestrator.MaxNewAnswersGlobal = nil, nil
			tc.edit(&cfg.Orchestrator)
			h.run(input(cfg))
			res := h.result()
			require.Equal(t, coord.StatusConsensus, res.Status)

			st := h.lastStatus()
			require.Equal(t, tc.answers, st.Agents[a].AnswerCount, "agent_a's answers")
			var auto *launchRec
			for _, l := range h.launched() {
				if l.Agent == a && l.AutoStop != "" {
					auto = &l
				}
			}
			require.NotNil(t, auto, "agent_a was stopped automatically: %v", pairs(h.launched()))
			require.Equal(t, tc.autoStopStep, auto.Step)
			require.Equal(t, tc.summary, auto.AutoStop)
			require.Equal(t, coord.StateStopped, st.Agents[a].State)
		})
	}
}

// Seed 001's pre-start fairness pause: with fairness_lead_cap_answers 1
// the fast agent is not launched again (and never vote-only) while its
// slow peer is still working on its first answer; the session still
// reaches consensus.
func TestFairnessPausesTheLeader(t *testing.T) {
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute),
		{b, 1}: answer(10 * time.Minute),
		{a, 2}: vote(b, time.Minute, nil),
		{b, 2}: vote(b, time.Minute, nil),
	})
	cfg := testConfig(a, b)
	cfg.Orchestrator.FairnessLeadCapAnswers = 1
	cfg.Orchestrator.MaxNewAnswersPerAgent, cfg.Orchestrator.MaxNewAnswersGlobal = nil, nil
	h.run(input(cfg))
	res := h.result()
	require.Equal(t, coord.StatusConsensus, res.Status)
	require.Equal(t, b, res.Winner)
	for _, l := range h.launched() {
		require.Equal(t, coord.ModeVoting, l.Mode, "%s:%d", l.Agent, l.Step)
		if l.Agent == a && l.Step == 2 {
			require.GreaterOrEqual(t, l.At, 10*time.Minute, "agent_a waited for agent_b's first answer")
			require.Equal(t, 2, len(l.Seen), "agent_a's second step starts with both answers stored")
		}
	}
	require.Equal(t, []string{a + ":1", b + ":1", a + ":2", b + ":2"}, pairs(h.launched()))
}

// In decomposition an agent that has not answered is still shown the
// others' work (they own different parts): otherwise an agent that stops
// without answering never covers a peer's answer, its stop is always
// stale, and it is relaunched until max_steps_per_agent.
func TestDecompositionStepWithoutAnswerSeesPeers(t *testing.T) {
	cfg := testConfig(a, b)
	cfg.Orchestrator.CoordinationMode = config.ModeDecomposition
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: stop(2*time.Minute, map[string]int{}), {b, 1}: answer(time.Minute),
		{a, 2}: stop(time.Minute, map[string]int{b: 1}), {b, 2}: stop(5*time.Minute, map[string]int{b: 1}),
	})
	h.run(input(cfg))
	r := h.result()
	require.Equal(t, coord.StatusConsensus, r.Status)
	var second *launchRec
	for _, l := range h.launched() {
		if l.Agent == a && l.Step == 2 {
			second = &l
		}
	}
	require.NotNil(t, second, "a is relaunched once b answered")
	require.Equal(t, map[string]int{b: 1}, second.Visible, "shown b's work though a has no answer")
	require.NotContains(t, pairs(h.launched()), "agent_a:3")
}

// A configured presenter that was dropped is replaced by the first alive
// agent (docs/config.md), not asked to write the final answer.
func TestDroppedPresenterIsReplaced(t *testing.T) {
	cfg := testConfig(a, b)
	cfg.Orchestrator.CoordinationMode = config.ModeDecomposition
	cfg.Orchestrator.Presenter = b
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {a, 2}: stop(time.Minute, nil),
		{b, 1}: fail(temporal.NewNonRetryableApplicationError("model gone", "ModelRejected", nil)),
	})
	h.run(input(cfg))
	r := h.result()
	require.Contains(t, r.FailedAgents, b)
	require.Equal(t, a, r.Winner, "the first alive agent presents")
	require.Equal(t, a, h.presents[len(h.presents)-1].Presenter)
}

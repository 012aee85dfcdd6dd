package workflows

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// evaluatorFake records RoundEvaluator runs.
type evaluatorFake struct {
	mu   sync.Mutex
	runs []contract.RoundEvaluatorInput
	fail bool
}

func (f *evaluatorFake) run(_ context.Context, in contract.RoundEvaluatorInput) (contract.RoundEvaluatorResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, in)
	if f.fail {
		return contract.RoundEvaluatorResult{}, temporal.NewNonRetryableApplicationError("no packet", contract.ErrTypeEnforcement, nil)
	}
	return contract.RoundEvaluatorResult{Round: in.Round, PacketKey: "evaluator/002/critique_packet.md", TasksValid: true,
		Usage: coord.Usage{InputTokens: 1000}}, nil
}

func gatedConfig(ids ...string) config.Config {
	cfg := testConfig(ids...)
	cfg.Orchestrator.VotingSensitivity = config.SensitivityChecklistGated
	cfg.Orchestrator.RoundEvaluatorBeforeChecklist = true
	cfg.Orchestrator.OrchestratorManagedRoundEvaluator = true
	return cfg
}

// With the managed evaluator, the workflow runs one RoundEvaluator over
// the first answers before any round-2 step, and every round-2 step is
// launched after it with its evaluation; first answers never wait.
func TestManagedRoundEvaluatorRunsBeforeRoundTwo(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(3 * time.Minute),
		{a, 2}: vote(b, time.Minute, seen), {b, 2}: vote(b, time.Minute, seen),
	})
	ev := &h.evaluator
	h.run(input(gatedConfig(a, b)))
	r := h.result()
	require.Equal(t, coord.StatusConsensus, r.Status)

	require.Len(t, ev.runs, 1)
	require.Equal(t, 2, ev.runs[0].Round)
	require.Equal(t, map[string]int{a: 1, b: 1}, ev.runs[0].Visible)
	require.Equal(t, a, ev.runs[0].Evaluator)
	ls := h.launched()
	require.Equal(t, []string{"agent_a:1", "agent_b:1", "agent_a:2", "agent_b:2"}, pairs(ls))
	for _, l := range ls[2:] {
		require.Equal(t, 2, l.Evaluation, "round-2 steps work from the evaluation")
		require.GreaterOrEqual(t, l.At, 3*time.Minute, "and wait for every first answer to be evaluated")
	}
	require.Zero(t, ls[0].Evaluation)
	require.Equal(t, int64(4*10+100+1000), r.Usage.InputTokens, "the evaluator's usage counts")
}

// A failed evaluator does not stop the round: steps go on without an
// evaluation, and it is not retried for the same answers.
func TestManagedRoundEvaluatorFailureIsNotFatal(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(time.Minute),
		{a, 2}: vote(b, time.Minute, seen), {b, 2}: vote(b, time.Minute, seen),
	})
	ev := &h.evaluator
	ev.fail = true
	h.run(input(gatedConfig(a, b)))
	require.Equal(t, coord.StatusConsensus, h.result().Status)
	require.Len(t, ev.runs, 1)
	for _, l := range h.launched()[2:] {
		require.Zero(t, l.Evaluation)
	}
}

// Without orchestrator_managed_round_evaluator the workflow launches no
// evaluator (each agent's step runs its own).
func TestUnmanagedRoundEvaluatorIsTheSteps(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(time.Minute),
		{a, 2}: vote(b, time.Minute, seen), {b, 2}: vote(b, time.Minute, seen),
	})
	ev := &h.evaluator
	cfg := gatedConfig(a, b)
	cfg.Orchestrator.OrchestratorManagedRoundEvaluator = false
	h.run(input(cfg))
	require.NoError(t, h.env.GetWorkflowError())
	require.Empty(t, ev.runs)
}

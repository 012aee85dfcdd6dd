package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
)

func roundTimedOut() scripted {
	return fail(temporal.NewNonRetryableApplicationError(
		"agent agent_a kept calling tools after the round's time was over (3 refused calls; round_timeout)", contract.ErrTypeTurnEnded, nil))
}

// Seed 001: repeated denied calls after the hard timeout end the agent's
// turn — not the agent. agent_a answered, overran its second step, and is
// relaunched with the next step number; it then votes, and the session
// reaches consensus with both agents.
func TestRoundTimeoutEndsTheTurnNotTheAgent(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(time.Minute),
		{a, 2}: {err: roundTimedOut().err, delay: 2 * time.Minute}, {b, 2}: vote(b, time.Minute, seen),
		{a, 3}: vote(b, time.Minute, seen),
	})
	h.run(input(testConfig(a, b)))
	r := h.result()
	require.Equal(t, coord.StatusConsensus, r.Status)
	require.Empty(t, r.FailedAgents, "a round timeout does not drop the agent")
	require.Equal(t, map[string]int{b: 2}, r.Votes)
	require.ElementsMatch(t, []string{"agent_a:1", "agent_b:1", "agent_a:2", "agent_b:2", "agent_a:3"}, pairs(h.launched()))
	final := h.lastStatus()
	require.Equal(t, 3, final.Agents[a].LatestStep)
}

// An agent whose steps keep overrunning is dropped after three in a row,
// as step mode drops one after three failing steps; the others decide.
func TestRoundTimeoutsInARowDropTheAgent(t *testing.T) {
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(time.Minute),
		{a, 2}: roundTimedOut(), {a, 3}: roundTimedOut(), {a, 4}: roundTimedOut(),
		{b, 2}: vote(b, time.Minute, map[string]int{a: 1, b: 1}),
	})
	h.run(input(testConfig(a, b)))
	r := h.result()
	require.Contains(t, r.FailedAgents[a], "3 steps in a row ended by the round timeout")
	require.Subset(t, pairs(h.launched()), []string{"agent_a:2", "agent_a:3", "agent_a:4"})
	require.NotContains(t, pairs(h.launched()), "agent_a:5", "dropped after the third")
	require.Equal(t, 4, h.lastStatus().Agents[a].GivenUpStep, "the third's folder is given up too")
}

// An action clears the count: timeouts that are not in a row never drop it.
func TestRoundTimeoutCountResetsOnAnAction(t *testing.T) {
	seen := map[string]int{a: 4, b: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(time.Minute),
		{a, 2}: roundTimedOut(), {a, 3}: roundTimedOut(), {a, 4}: answer(time.Minute),
		{a, 5}: roundTimedOut(), {a, 6}: roundTimedOut(), {a, 7}: vote(a, time.Minute, seen),
		{b, 2}: vote(a, 5*time.Minute, seen),
	})
	h.run(input(testConfig(a, b)))
	r := h.result()
	require.Empty(t, r.FailedAgents)
	require.Equal(t, coord.StatusConsensus, r.Status)
	require.Equal(t, map[string]int{a: 2}, r.Votes)
	require.Contains(t, pairs(h.launched()), "agent_a:7")
}

// A step given up without an action counts toward max_steps_per_agent as
// a step that acted does (docs/config.md: "It caps the step number"):
// with a cap of 2, the agent whose step 2 overran is not launched a third
// time; the others decide.
func TestGivenUpStepsCountTowardTheStepCap(t *testing.T) {
	cfg := testConfig(a, b)
	cfg.Orchestrator.MaxStepsPerAgent = 2
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(time.Minute),
		{a, 2}: roundTimedOut(), {b, 2}: vote(a, 2*time.Minute, map[string]int{a: 1, b: 1}),
		{a, 3}: vote(a, time.Minute, map[string]int{a: 1, b: 1}),
	})
	h.run(input(cfg))
	require.NotContains(t, pairs(h.launched()), "agent_a:3", "step 3 is past the cap of 2")
	r := h.result()
	require.Empty(t, r.FailedAgents)
	require.Equal(t, a, r.Winner)
	require.Equal(t, 2, h.lastStatus().Agents[a].GivenUpStep, "status.json says which step was given up")
}

// An answer refused by peers' limits ends the turn without counting
// against the agent: two overruns and then such a refusal do not drop it,
// and it votes in its next step.
func TestAnswerRefusedDoesNotCountAsAnOverrun(t *testing.T) {
	refused := fail(temporal.NewNonRetryableApplicationError("agent agent_a's answer was refused by an answer limit", contract.ErrTypeAnswerRefused, nil))
	seen := map[string]int{b: 1}
	h := newHarness(t, map[stepKey]scripted{
		// agent_a's steps end after b's answer is in, so its vote is fresh.
		{a, 1}: {err: roundTimedOut().err, delay: 2 * time.Minute}, {a, 2}: roundTimedOut(), {a, 3}: refused, {a, 4}: vote(b, time.Minute, seen),
		{b, 1}: answer(time.Minute), {b, 2}: vote(b, 5*time.Minute, seen),
	})
	h.run(input(testConfig(a, b)))
	r := h.result()
	require.Empty(t, r.FailedAgents)
	require.Equal(t, map[string]int{b: 2}, r.Votes)
}

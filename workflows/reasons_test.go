package workflows

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// A dropped agent carries why it failed in the status and the result, and
// a presentation that fell back says so, both without the activity's
// wrappers.
func TestFailureReasonsAreReported(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	rejected := temporal.NewNonRetryableApplicationError(`model "x" not found (404)`, "ModelRejected", nil)
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute), {c, 1}: fail(rejected),
		{a, 2}: vote(b, 2*time.Minute, seen), {b, 2}: vote(b, 3*time.Minute, seen),
	})
	h.presentErr = map[string]error{
		string(config.FinalSynthesize): temporal.NewNonRetryableApplicationError("presenter model gone", "ModelRejected", nil),
	}
	cfg := testConfig(a, b, c)
	cfg.Orchestrator.FinalAnswerStrategy = config.FinalSynthesize
	h.run(input(cfg))

	r := h.result()
	require.Equal(t, coord.StatusConsensus, r.Status)
	require.Equal(t, map[string]string{c: `step 1: model "x" not found (404)`}, r.FailedAgents)
	require.Equal(t, "synthesize presentation by agent_b failed: presenter model gone", r.PresentationFallback)
	final := h.lastStatus()
	require.Equal(t, `step 1: model "x" not found (404)`, final.Agents[c].FailReason)
	require.Equal(t, r.PresentationFallback, final.PresentationFallback)
}

func TestFailureReasonIsShort(t *testing.T) {
	long := temporal.NewNonRetryableApplicationError(strings.Repeat("é", 400), "ModelRejected", nil)
	got := failureReason(long)
	require.LessOrEqual(t, len(got), maxFailReason+len("…"))
	require.True(t, strings.HasSuffix(got, "…"))
	require.True(t, utf8.ValidString(got))
}

// The tokens a failed presentation spent (reported with its error) count
// in the session's usage after the fallback.
func TestFallbackCountsPresentationTokens(t *testing.T) {
	spent := coord.Usage{InputTokens: 700, OutputTokens: 30, CostUSD: 0.5}
	run := func(details ...any) coord.Usage {
		seen := map[string]int{a: 1, b: 1}
		h := newHarness(t, map[stepKey]scripted{
			{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute),
			{a, 2}: vote(b, 2*time.Minute, seen), {b, 2}: vote(b, 3*time.Minute, seen),
		})
		h.presentErr = map[string]error{
			string(config.FinalSynthesize): temporal.NewApplicationErrorWithOptions("presenter model gone", "ModelRejected",
				temporal.ApplicationErrorOptions{NonRetryable: true, Details: details}),
		}
		cfg := testConfig(a, b)
		cfg.Orchestrator.FinalAnswerStrategy = config.FinalSynthesize
		h.run(input(cfg))
		r := h.result()
		require.NotEmpty(t, r.PresentationFallback)
		return r.Usage
	}
	without, with := run(), run(spent)
	require.Equal(t, without.InputTokens+spent.InputTokens, with.InputTokens)
	require.Equal(t, without.OutputTokens+spent.OutputTokens, with.OutputTokens)
	require.InDelta(t, without.CostUSD+spent.CostUSD, with.CostUSD, 1e-9)
}

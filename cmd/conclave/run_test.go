package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
)

func TestProgressShowsRetriesAndReasons(t *testing.T) {
	s := coord.Status{Phase: coord.PhaseCoordinating, Usage: coord.Usage{InputTokens: 10, Unpriced: true},
		Agents: map[string]coord.AgentStatus{
			"agent_a": {State: coord.StateVoted, LatestStep: 2, AnswerCount: 1, VoteTarget: "agent_a"},
			"agent_b": {State: coord.StateNoAction},
			"agent_c": {State: coord.StateFailed, FailReason: `step 1: model "x" not found (404)`},
		}}
	out := progress(s, []retryingStep{{Step: "agent_b · step 1", Attempt: 3, LastFailure: "connection refused"}}, nil)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, "— coordinating · tokens 10 in / 0 out · cost unknown", lines[0])
	require.Contains(t, lines[1], "step 2 · answers 1 → agent_a")
	require.Contains(t, lines[2], "no_action step 0 · answers 0 · retrying (attempt 3)")
	require.Contains(t, lines[3], `failed    step 1: model "x" not found (404)`)
}

func TestSessionFailedOwned(t *testing.T) {
	owned := temporal.NewNonRetryableApplicationError(`session "s1" in /data/sessions/s1 belongs to workflow s1 (first run a), not to workflow s1 (first run b): …`, contract.ErrTypeSessionOwned, nil)
	msg := sessionFailed("s1", fmt.Errorf("workflow execution error: %w", owned))
	require.Equal(t, "session s1 was refused: its session folder belongs to an earlier session with this id; nothing was changed; choose another --id", msg)
	require.Equal(t, "session s1 failed: the model is down", sessionFailed("s1", temporal.NewApplicationError("the model is down", "X")))
}

package session

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClaimStepIsExclusiveAndReleased(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	now := time.Date(2026, 3, 20, 22, 0, 0, 0, time.UTC)
	a, err := ClaimStep(ctx, st, "agent_a", 1, now)
	require.NoError(t, err)
	_, err = ClaimStep(ctx, st, "agent_a", 1, now)
	require.ErrorIs(t, err, ErrClaimed)
	require.NoError(t, CheckStepClaim(ctx, st, "agent_a", 1, a))
	require.ErrorIs(t, CheckStepClaim(ctx, st, "agent_a", 1, "someone else"), ErrClaimed)

	// Only the holder releases.
	require.NoError(t, ReleaseStep(st, "agent_a", 1, "someone else"))
	require.ErrorIs(t, CheckStepClaim(ctx, st, "agent_a", 1, "x"), ErrClaimed)
	require.NoError(t, CheckStepClaim(ctx, st, "agent_a", 1, a))
	require.NoError(t, ReleaseStep(st, "agent_a", 1, a))
	b, err := ClaimStep(ctx, st, "agent_a", 1, now)
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	require.ErrorIs(t, CheckStepClaim(ctx, st, "agent_a", 1, a), ErrClaimed)
}

// A run that read the session before another run stored the step must not
// take the folder once that run let go: a folder never holds two actions.
func TestClaimStepRefusesAStoredStep(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	require.NoError(t, st.Put(ctx, AnswerKey("agent_a", 1), []byte(`{"agent_id":"agent_a","answer":"x","timestamp":"2026-03-20T22:32:03Z"}`)))
	_, err := ClaimStep(ctx, st, "agent_a", 1, time.Now())
	require.ErrorIs(t, err, ErrClaimed)
	assert.Contains(t, err.Error(), "was stored by another run meanwhile")
	_, err = st.Get(ctx, ClaimKey("agent_a", 1))
	require.Error(t, err, "the refused claim is removed")
}

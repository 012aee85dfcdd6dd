package session

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
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

// A claim left by a killed run of this machine is taken over, so that an
// interrupted step relaunched resumes; a live run's claim, or another
// machine's, is not.
func TestClaimStepTakesOverADeadRunsClaim(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	host, _ := os.Hostname()
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	for _, c := range []struct {
		name string
		f    ClaimFile
		take bool
	}{
		{"killed run here", ClaimFile{Token: "old", Host: host, PID: dead.Process.Pid}, true},
		{"live run here", ClaimFile{Token: "old", Host: host, PID: os.Getpid()}, false},
		{"run elsewhere", ClaimFile{Token: "old", Host: host + "-other", PID: dead.Process.Pid}, false},
	} {
		data, err := json.Marshal(c.f)
		require.NoError(t, err)
		require.NoError(t, st.Put(ctx, ClaimKey("agent_a", 1), data))
		_, err = ClaimStep(ctx, st, "agent_a", 1, time.Now())
		assert.Equal(t, c.take, err == nil, "%s: %v", c.name, err)
		require.NoError(t, st.Delete(ctx, ClaimKey("agent_a", 1)))
	}
}

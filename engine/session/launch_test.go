package session

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/coord"
)

// launch.json decides a step folder once: whichever of the launch's commit
// and the workflow's fence is created first holds it for good.
func TestCommitAndFence(t *testing.T) {
	ctx := context.Background()
	type op struct {
		fence  bool
		launch string
		// want: for a commit, whether it is refused (superseded); for a
		// fence, whether it reports the launch committed.
		want bool
	}
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"commit, retried commit, fence", []op{{false, "3", false}, {false, "3", false}, {true, "3", true}}},
		{"fence, then the launch's commit", []op{{true, "3", false}, {false, "3", true}}},
		{"fence twice (a retried fence)", []op{{true, "3", false}, {true, "3", false}, {false, "3", true}}},
		{"another launch's commit", []op{{false, "3", false}, {false, "5", true}, {true, "5", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := newStore(t)
			for i, o := range tc.ops {
				if o.fence {
					committed, err := Fence(ctx, st, "agent_a", 2, o.launch, "restart", "", t0)
					require.NoError(t, err)
					require.Equal(t, o.want, committed, "op %d", i)
					continue
				}
				err := Commit(ctx, st, "agent_a", 2, o.launch, t0)
				require.Equal(t, o.want, errors.Is(err, ErrSuperseded), "op %d: %v", i, err)
				if !o.want {
					require.NoError(t, err)
				}
				require.Equal(t, err == nil, CheckLaunch(ctx, st, "agent_a", 2, o.launch) == nil)
			}
		})
	}
}

func TestDamagedLaunchMarkerClosesTheFolder(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	require.NoError(t, st.Put(ctx, LaunchKey("agent_a", 1), []byte("{not json")))
	require.ErrorIs(t, Commit(ctx, st, "agent_a", 1, "1", t0), ErrSuperseded)
	require.ErrorIs(t, CheckLaunch(ctx, st, "agent_a", 1, "1"), ErrSuperseded)
	committed, err := Fence(ctx, st, "agent_a", 1, "1", "restart", "", t0)
	require.NoError(t, err)
	require.False(t, committed)
}

// A fenced folder (its marker and the checkpoint its launch wrote) is not a
// step, and step mode never reuses its number.
func TestFencedFolderIsNotAStep(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	save(t, st, answer("agent_a", "A1"))
	_, err := Fence(ctx, st, "agent_a", 2, "4", "restart", "", t0)
	require.NoError(t, err)
	require.NoError(t, st.Put(ctx, TraceKey("agent_a", 2), []byte("{}\n")))

	snap, err := Load(ctx, st)
	require.NoError(t, err)
	a, _ := snap.Agent("agent_a")
	require.Equal(t, 1, a.LatestStep)
	require.Equal(t, 1, a.AnswerCount)
	require.Equal(t, 3, coord.NextStep(a.Agent))
	require.Equal(t, 2, a.GivenUpStep)
	require.Empty(t, snap.Problems)

	s := save(t, st, vote("agent_a", "agent_a", map[string]int{"agent_a": 1}))
	require.Equal(t, 3, s.Step, "step mode's next step comes after the fenced folder")
	_, err = st.Get(ctx, VoteKey("agent_a", 2))
	require.Error(t, err)
}

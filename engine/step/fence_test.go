package step

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

// A step the workflow shows nothing (Visible {}: its agent has no answer of
// its own yet) sees no answer and is offered no vote, even though a peer's
// answer is stored by the time it starts.
func TestEmptyVisibleShowsNoAnswer(t *testing.T) {
	ctx := context.Background()
	st := store(t)
	_, err := session.Save(ctx, st, session.StepOutput{Agent: "agent_b", Action: coord.ActionNewAnswer, Answer: "B1 stored first", Now: now()})
	require.NoError(t, err)
	srv := llmtest.Start(t, llmtest.Call("new_answer", `{"content":"A1"}`))
	res, err := Run(ctx, Options{Store: st, Config: team(t), Agent: "agent_a", Task: "t", Step: 1, Tag: "1",
		Visible: map[string]int{}, Model: model(t, srv), Now: now})
	require.NoError(t, err)
	require.Equal(t, coord.ActionNewAnswer, res.Outcome.Action)
	first := srv.Requests()[0]
	require.True(t, first.Contains("(no answers available yet)"))
	require.False(t, first.Contains("B1 stored first"))
	require.False(t, first.HasTool("vote"), "nothing to vote for")
}

// An exclusive step whose folder the workflow fenced off writes nothing
// but its checkpoint — no answer, vote, workspace or last_action.json — and
// fails with ErrSuperseded: fenced before it starts (no model call), while
// it runs (it stops at its next checkpoint), or after its last checkpoint
// (its commit is refused).
func TestFencedStepWritesNothing(t *testing.T) {
	ctx := context.Background()
	fence := func(st storage.Store) {
		committed, err := session.Fence(ctx, st, "agent_a", 2, "7", "restart", "", now())
		require.NoError(t, err)
		require.False(t, committed)
	}
	for _, tc := range []struct {
		name  string
		reply func(st storage.Store) llmtest.Rule
		// before fences before Run; onCheckpoint fences after the n-th
		// stored checkpoint (0: never).
		before       bool
		onCheckpoint int
		calls        int
	}{
		{name: "before it starts", before: true, calls: 0},
		{name: "while it runs", calls: 1, reply: func(st storage.Store) llmtest.Rule {
			return llmtest.Func(func(llmtest.Request) llmtest.Reply {
				fence(st)
				return call("vote", `{"agent_id":"agent2","reason":"B1"}`)
			})
		}},
		// The first checkpoint holds the model's reply, the second the
		// decided vote: then only the commit stands in the way.
		{name: "after its last checkpoint", onCheckpoint: 2, calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store(t)
			_, err := session.Save(ctx, st, session.StepOutput{Agent: "agent_a", Action: coord.ActionNewAnswer, Answer: "A1", Now: now()})
			require.NoError(t, err)
			_, err = session.Save(ctx, st, session.StepOutput{Agent: "agent_b", Action: coord.ActionNewAnswer, Answer: "B1", Now: now()})
			require.NoError(t, err)
			lastBefore, err := st.Get(ctx, session.LastActionKey("agent_a"))
			require.NoError(t, err)
			rule := llmtest.Call("vote", `{"agent_id":"agent2","reason":"B1"}`)
			if tc.reply != nil {
				rule = tc.reply(st)
			}
			srv := llmtest.Start(t, rule)
			if tc.before {
				fence(st)
			}
			checkpoints := 0
			_, err = Run(ctx, Options{Store: st, Config: team(t), Agent: "agent_a", Task: "t", Step: 2, Tag: "7",
				Exclusive: true, Model: model(t, srv), Now: now, OnCheckpoint: func(int) {
					if checkpoints++; checkpoints == tc.onCheckpoint {
						fence(st)
					}
				}})
			require.ErrorIs(t, err, session.ErrSuperseded)
			require.Equal(t, tc.calls, srv.Count())
			if tc.onCheckpoint > 0 {
				trace, err := st.Get(ctx, session.TraceKey("agent_a", 2))
				require.NoError(t, err)
				require.Contains(t, string(trace), `"final":{"action":"vote"`, "the vote was decided and checkpointed")
			}
			for _, key := range []string{session.VoteKey("agent_a", 2), session.AnswerKey("agent_a", 2)} {
				_, err := st.Get(ctx, key)
				require.ErrorIs(t, err, storage.ErrNotFound, key)
			}
			keys, err := st.List(ctx, session.WorkspacePrefix("agent_a", 2))
			require.NoError(t, err)
			require.Empty(t, keys)
			lastAfter, err := st.Get(ctx, session.LastActionKey("agent_a"))
			require.NoError(t, err)
			require.Equal(t, string(lastBefore), string(lastAfter), "last_action.json is untouched")
			snap, err := session.Load(ctx, st)
			require.NoError(t, err)
			a, _ := snap.Agent("agent_a")
			require.Equal(t, 1, a.LatestStep, "the fenced folder is not a step")
		})
	}
}

// A step that committed is its launch's for good: a retry of the same
// launch rewrites it, the fence that comes after reports it committed, and
// another launch of the same number is refused.
func TestCommittedStepOutlivesTheFence(t *testing.T) {
	ctx := context.Background()
	st := store(t)
	srv := llmtest.Start(t, llmtest.Call("new_answer", `{"content":"A1"}`))
	o := Options{Store: st, Config: team(t), Agent: "agent_a", Task: "t", Step: 1, Tag: "3",
		Visible: map[string]int{}, Exclusive: true, Model: model(t, srv), Now: now}
	res, err := Run(ctx, o)
	require.NoError(t, err)
	require.Equal(t, session.AnswerKey("agent_a", 1), res.Saved.Key)

	_, err = Run(ctx, o) // a retry of the same launch: resumed, saved again
	require.NoError(t, err)
	require.Equal(t, 1, srv.Count())

	committed, err := session.Fence(ctx, st, "agent_a", 1, "3", "restart", "", now())
	require.NoError(t, err)
	require.True(t, committed)

	o.Tag = "4"
	_, err = Run(ctx, o)
	require.True(t, errors.Is(err, session.ErrSuperseded), "%v", err)
	require.Equal(t, 1, srv.Count(), "refused before a model call")
}

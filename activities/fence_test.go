package activities

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

// The step is shown what the workflow decided at launch: with Visible {}
// (no answer of its own yet) a peer's answer stored before the activity
// started is not shown, and no vote is offered.
func TestAgentStepShowsTheLaunchView(t *testing.T) {
	var first *llmtest.Request
	acts, env, cfg, st := setup(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if first == nil {
			first = &r
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c", Name: "new_answer", Arguments: `{"content":"A1"}`}}}
	}))
	ctx := context.Background()
	ref, hash := initSession(t, acts, env, "s1", "t", cfg)
	_, err := session.Save(ctx, storage.Sub(st, "s1"), session.StepOutput{Agent: "agent_b", Action: coord.ActionNewAnswer, Answer: "B1 came first", Now: time.Now()})
	require.NoError(t, err)
	_, err = env.ExecuteActivity(acts.AgentStep, contract.AgentStepInput{SessionID: "s1", Agent: "agent_a", Step: 1, Launch: 1,
		SessionRef: ref, InputsHash: hash, Mode: coord.ModeVoting, Visible: map[string]int{}})
	require.NoError(t, err)
	require.NotNil(t, first)
	require.True(t, first.Contains("(no answers available yet)"))
	require.False(t, first.Contains("B1 came first"))
	require.False(t, first.HasTool("vote"))
}

// A fenced step writes nothing and fails with the non-retryable
// StepSuperseded; FenceStep tells a committed launch from one it fenced off.
func TestFenceStep(t *testing.T) {
	acts, env, cfg, st := setup(t, llmtest.Call("vote", `{"agent_id":"agent2","reason":"B1"}`))
	ctx := context.Background()
	ref, hash := initSession(t, acts, env, "s1", "t", cfg)
	sess := storage.Sub(st, "s1")
	for _, ag := range []string{"agent_a", "agent_b"} {
		_, err := session.Save(ctx, sess, session.StepOutput{Agent: ag, Action: coord.ActionNewAnswer, Answer: ag + " 1", Now: time.Now()})
		require.NoError(t, err)
	}
	last, err := sess.Get(ctx, session.LastActionKey("agent_a"))
	require.NoError(t, err)
	fence := func(agent string, step, launch int) bool {
		v, err := env.ExecuteActivity(acts.FenceStep, contract.FenceStepInput{SessionID: "s1", SessionRef: ref, Agent: agent, Step: step, Launch: launch, Reason: "restart"})
		require.NoError(t, err)
		var res contract.FenceStepResult
		require.NoError(t, v.Get(&res))
		return res.Committed
	}
	stepIn := func(agent string, launch int) contract.AgentStepInput {
		return contract.AgentStepInput{SessionID: "s1", Agent: agent, Step: 2, Launch: launch, SessionRef: ref, InputsHash: hash,
			Mode: coord.ModeVoting, Visible: map[string]int{"agent_a": 1, "agent_b": 1}}
	}

	// agent_a's step 2 (launch 3) is fenced off before it could commit.
	require.False(t, fence("agent_a", 2, 3))
	var marker session.LaunchFile
	require.NoError(t, session.ReadJSON(ctx, sess, session.LaunchKey("agent_a", 2), &marker))
	require.Equal(t, session.LaunchFile{Launch: "3", Fenced: true, Reason: "restart", Timestamp: marker.Timestamp}, marker)
	_, err = env.ExecuteActivity(acts.AgentStep, stepIn("agent_a", 3))
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, contract.ErrTypeSuperseded, appErr.Type())
	require.True(t, appErr.NonRetryable())
	for _, key := range []string{session.VoteKey("agent_a", 2), session.AnswerKey("agent_a", 2)} {
		_, err := sess.Get(ctx, key)
		require.ErrorIs(t, err, storage.ErrNotFound)
	}
	after, err := sess.Get(ctx, session.LastActionKey("agent_a"))
	require.NoError(t, err)
	require.JSONEq(t, string(last), string(after))

	// agent_b's step 2 (launch 4) commits and stores its vote: the fence
	// that comes after reports it committed and changes nothing.
	_, err = env.ExecuteActivity(acts.AgentStep, stepIn("agent_b", 4))
	require.NoError(t, err)
	require.True(t, fence("agent_b", 2, 4))
	var v session.VoteFile
	require.NoError(t, session.ReadJSON(ctx, sess, session.VoteKey("agent_b", 2), &v))
	data, err := sess.Get(ctx, session.LaunchKey("agent_b", 2))
	require.NoError(t, err)
	var commit session.LaunchFile
	require.NoError(t, json.Unmarshal(data, &commit))
	require.Equal(t, "4", commit.Launch)
	require.False(t, commit.Fenced)
}

// A step that ends for good without an action fences its own folder, so
// that whoever reads the session later (`session status`) does not take
// its checkpoint for a step still running; the round timeout has its own
// error type, which the workflow answers with a relaunch.
func TestAgentStepOverFencesItsFolder(t *testing.T) {
	for _, tc := range []struct {
		name, errType string
		timeout       bool
	}{
		{"round timeout", contract.ErrTypeTurnEnded, true},
		{"no valid action", contract.ErrTypeEnforcement, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acts, env, cfg, st := setup(t, llmtest.Func(func(llmtest.Request) llmtest.Reply {
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "w", Name: "write_file", Arguments: `{"path":"late.txt","content":"x"}`}}}
			}))
			if tc.timeout {
				cfg.Orchestrator.InitialRoundTimeoutSeconds = 60
				var mu sync.Mutex
				at := time.Now()
				acts.Now = func() time.Time { // a minute passes between two looks at the clock
					mu.Lock()
					defer mu.Unlock()
					at = at.Add(time.Minute)
					return at
				}
			}
			ref, hash := initSession(t, acts, env, "s1", "t", cfg)
			_, err := env.ExecuteActivity(acts.AgentStep, contract.AgentStepInput{SessionID: "s1", Agent: "agent_a", Step: 1, Launch: 7,
				SessionRef: ref, InputsHash: hash, Mode: coord.ModeVoting, Visible: map[string]int{}})
			var app *temporal.ApplicationError
			require.True(t, errors.As(err, &app), "%v", err)
			require.Equal(t, tc.errType, app.Type())
			require.True(t, app.NonRetryable())
			if tc.timeout {
				require.Contains(t, app.Message(), "kept calling tools after the round's time was over")
			}
			var launch session.LaunchFile
			require.NoError(t, session.ReadJSON(context.Background(), storage.Sub(st, "s1"), session.LaunchKey("agent_a", 1), &launch))
			require.True(t, launch.Fenced)
			require.Equal(t, tc.errType, launch.Reason)
			snap, err := session.Load(context.Background(), storage.Sub(st, "s1"))
			require.NoError(t, err)
			a, _ := snap.Agent("agent_a")
			require.False(t, a.Running, "a dead step is not running")
		})
	}
}

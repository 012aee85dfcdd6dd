package activities

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/checklist"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/evaluator"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func evaluation(t *testing.T, tasks any) string {
	t.Helper()
	p := map[string]string{}
	for _, s := range checklist.PacketSections {
		p[s.Key] = s.Title
	}
	data, err := json.Marshal(map[string]any{"critique_packet": p, "next_tasks": tasks})
	require.NoError(t, err)
	return string(data)
}

func TestRoundEvaluatorStoresHandoff(t *testing.T) {
	acts, env, cfg, st := setup(t,
		llmtest.Call(evaluator.ToolSubmit, evaluation(t, map[string]any{"tasks": []any{}})).Once(),
		llmtest.Text("no tools").Times(3))
	owner := &contract.Owner{WorkflowID: "wf", FirstRunID: "run"}
	v, err := env.ExecuteActivity(acts.InitSession, contract.InitSessionInput{SessionID: "s1", Task: "Pages.",
		Owner: *owner, Config: cfg, CreatedAt: time.Now().UTC().Format(time.RFC3339)})
	require.NoError(t, err)
	var init contract.InitSessionResult
	require.NoError(t, v.Get(&init))
	sess := storage.Sub(st, "s1")
	for _, a := range []string{"agent_a", "agent_b"} {
		_, err := session.Save(context.Background(), sess, session.StepOutput{Agent: a, Step: 1, Action: coord.ActionNewAnswer, Answer: a + " v1", Now: time.Now()})
		require.NoError(t, err)
	}
	in := contract.RoundEvaluatorInput{SessionID: "s1", SessionRef: contract.SessionRef{Owner: owner, Location: init.Location},
		InputsHash: init.InputsHash, Round: 2, Visible: map[string]int{"agent_a": 1, "agent_b": 1}, Evaluator: "agent_a", Launch: 3}
	v, err = env.ExecuteActivity(acts.RoundEvaluator, in)
	require.NoError(t, err)
	var res contract.RoundEvaluatorResult
	require.NoError(t, v.Get(&res))
	require.False(t, res.TasksValid, "an empty task list is the degraded path")
	require.Contains(t, res.TasksError, "no tasks")
	require.Equal(t, session.SessionEvaluation(2).Packet(), res.PacketKey)
	_, err = sess.Get(context.Background(), res.PacketKey)
	require.NoError(t, err)
	require.Positive(t, res.Usage.InputTokens)

	// An evaluator that never submits fails for good, not retried.
	in.Round, in.Launch = 3, 4
	_, err = env.ExecuteActivity(acts.RoundEvaluator, in)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, contract.ErrTypeEnforcement, appErr.Type())
	require.True(t, appErr.NonRetryable())

	// Another owner is refused.
	in.Owner = &contract.Owner{WorkflowID: "other", FirstRunID: "x"}
	_, err = env.ExecuteActivity(acts.RoundEvaluator, in)
	require.True(t, errors.As(err, &appErr))
	require.Equal(t, contract.ErrTypeSessionOwned, appErr.Type())
}

package activities

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

// snapshotFiles reads every stored file, to prove a refusal changed nothing.
func snapshotFiles(t *testing.T, st storage.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := st.List(ctx, "")
	require.NoError(t, err)
	files := map[string]string{}
	for _, k := range keys {
		data, err := st.Get(ctx, k)
		require.NoError(t, err)
		files[k] = string(data)
	}
	return files
}

func appError(t *testing.T, err error) *temporal.ApplicationError {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "not an application error: %v", err)
	return appErr
}

// A session belongs to the workflow that created it: another owner is
// refused by InitSession and by every activity that writes, and nothing
// stored changes; the owner's own retry goes on.
func TestSessionOwnership(t *testing.T) {
	acts, env, cfg, st := setup(t, call("new_answer", `{"content":"ONE"}`))
	x := &contract.Owner{WorkflowID: "wf-x", FirstRunID: "run-1"}
	other := &contract.Owner{WorkflowID: "wf-y", FirstRunID: "run-9"}
	init := func(owner *contract.Owner, task string) (contract.InitSessionResult, error) {
		v, err := env.ExecuteActivity(acts.InitSession, contract.InitSessionInput{SessionID: "X", Task: task,
			Owner: *owner, Config: cfg, EvalCriteria: []string{"correct"}})
		var res contract.InitSessionResult
		if err == nil {
			require.NoError(t, v.Get(&res))
		}
		return res, err
	}
	res, err := init(x, "ONE")
	require.NoError(t, err)
	require.Equal(t, st.Location()+"/X", res.Location)
	require.NotEmpty(t, res.InputsHash)

	again, err := init(x, "ONE")
	require.NoError(t, err, "the owner's retry (or reset) goes on")
	require.Equal(t, res, again)

	ref := contract.SessionRef{Owner: x, Location: res.Location}
	_, err = env.ExecuteActivity(acts.AgentStep, contract.AgentStepInput{SessionID: "X", Agent: "agent_a", Step: 1, Launch: 1,
		SessionRef: ref, InputsHash: res.InputsHash, Mode: coord.ModeVoting})
	require.NoError(t, err, "a step by reference loads the stored task and config")
	before := snapshotFiles(t, st)
	require.Contains(t, before, "X/config.json")

	_, err = init(other, "TWO")
	require.ErrorContains(t, err, "belongs to workflow wf-x (first run run-1), not to workflow wf-y")
	appErr := appError(t, err)
	require.Equal(t, contract.ErrTypeSessionOwned, appErr.Type())
	require.True(t, appErr.NonRetryable())

	bad := contract.SessionRef{Owner: other, Location: res.Location}
	_, err = env.ExecuteActivity(acts.AgentStep, contract.AgentStepInput{SessionID: "X", Agent: "agent_b", Step: 1, Launch: 2,
		SessionRef: bad, InputsHash: res.InputsHash, Mode: coord.ModeVoting})
	require.Equal(t, contract.ErrTypeSessionOwned, appError(t, err).Type())
	_, err = env.ExecuteActivity(acts.Present, contract.PresentInput{SessionID: "X", Presenter: "agent_a",
		SessionRef: bad, InputsHash: res.InputsHash, Strategy: "winner_reuse"})
	require.Equal(t, contract.ErrTypeSessionOwned, appError(t, err).Type())
	_, err = env.ExecuteActivity(acts.WriteStatus, contract.WriteStatusInput{SessionID: "X", SessionRef: bad})
	require.Equal(t, contract.ErrTypeSessionOwned, appError(t, err).Type())
	_, err = env.ExecuteActivity(acts.WriteInbox, contract.WriteInboxInput{SessionID: "X", SessionRef: bad, Seq: 1, Text: "hi"})
	require.Equal(t, contract.ErrTypeSessionOwned, appError(t, err).Type())
	require.Equal(t, before, snapshotFiles(t, st), "a refused owner changed the session")

	// A session made without an owner (step mode) is not taken over either.
	require.NoError(t, session.WriteJSON(context.Background(), storage.Sub(st, "S"), session.InfoKey, session.Info{Task: "step mode"}))
	_, err = env.ExecuteActivity(acts.InitSession, contract.InitSessionInput{SessionID: "S", Task: "t", Owner: *x, Config: cfg})
	require.ErrorContains(t, err, "without an owner")
}

// A worker whose storage does not hold the session refuses the attempt
// retryably, naming both locations, and writes nothing.
func TestWrongStorageIsRetryable(t *testing.T) {
	acts, env, _, st := setup(t)
	x := &contract.Owner{WorkflowID: "wf-x", FirstRunID: "run-1"}
	cases := map[string]contract.SessionRef{
		"location differs":     {Owner: x, Location: "s3://elsewhere/sessions/X"},
		"session.json missing": {Owner: x, Location: st.Location() + "/X"},
	}
	for name, ref := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := env.ExecuteActivity(acts.AgentStep, contract.AgentStepInput{SessionID: "X", Agent: "agent_a", Step: 1, Launch: 1,
				SessionRef: ref, InputsHash: "sha256:x", Mode: coord.ModeVoting})
			appErr := appError(t, err)
			require.Equal(t, contract.ErrTypeWrongStorage, appErr.Type())
			require.False(t, appErr.NonRetryable())
			require.ErrorContains(t, err, ref.Location)
			require.ErrorContains(t, err, st.Location())
			_, err = env.ExecuteActivity(acts.WriteStatus, contract.WriteStatusInput{SessionID: "X", SessionRef: ref})
			require.Equal(t, contract.ErrTypeWrongStorage, appError(t, err).Type())
			require.Empty(t, snapshotFiles(t, st))
		})
	}
}

// Stored inputs that no longer hash to what the workflow holds stop the
// step for good.
func TestChangedInputsAreRefused(t *testing.T) {
	acts, env, cfg, st := setup(t)
	x := &contract.Owner{WorkflowID: "wf-x", FirstRunID: "run-1"}
	v, err := env.ExecuteActivity(acts.InitSession, contract.InitSessionInput{SessionID: "X", Task: "ONE", Owner: *x, Config: cfg})
	require.NoError(t, err)
	var res contract.InitSessionResult
	require.NoError(t, v.Get(&res))
	require.NoError(t, st.Put(context.Background(), "X/config.json", []byte(`{"agents":[]}`)))
	_, err = env.ExecuteActivity(acts.AgentStep, contract.AgentStepInput{SessionID: "X", Agent: "agent_a", Step: 1, Launch: 1,
		SessionRef: contract.SessionRef{Owner: x, Location: res.Location}, InputsHash: res.InputsHash, Mode: coord.ModeVoting})
	appErr := appError(t, err)
	require.Equal(t, contract.ErrTypeConfig, appErr.Type())
	require.ErrorContains(t, err, "not the ones it was started with")
}

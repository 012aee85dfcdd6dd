//go:build integration

package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// taskModel answers with the task's marker word (TASK-ONE → "answer to
// ONE"), votes for the lowest anonymous id with an answer and presents what it was shown, so an answer
// that crosses sessions is visible in the final answer.
func taskModel(r llmtest.Request) llmtest.Reply {
	word := "?"
	for _, w := range []string{"ONE", "TWO", "THREE"} {
		if r.Contains("TASK-" + w) {
			word = w
		}
	}
	switch {
	case strings.Contains(r.Messages[0].Content, "present the final answer"):
		return call("new_answer", map[string]string{"content": "FINAL for " + word + ": " + lastAnswerShown(r)})
	case r.HasTool("vote"):
		// The lowest anonymous id with an answer: agent1 once it answered.
		for _, id := range []string{"agent1", "agent2", "agent3", "agent4"} {
			if r.Contains("<" + id + ".") {
				return call("vote", map[string]string{"agent_id": id, "reason": "fine"})
			}
		}
		fallthrough
	default:
		return call("new_answer", map[string]string{"content": "answer to " + word + " by " + agentOf(r.Model)})
	}
}

// lastAnswerShown is the first "answer to X" the request shows.
func lastAnswerShown(r llmtest.Request) string {
	for _, w := range []string{"ONE", "TWO", "THREE"} {
		if r.Contains("answer to " + w) {
			return "answer to " + w
		}
	}
	return "no answer"
}

// filesOf reads every file of a store, to compare before and after.
func filesOf(t *testing.T, st storage.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := st.List(ctx, "")
	require.NoError(t, err)
	out := map[string]string{}
	for _, k := range keys {
		data, err := st.Get(ctx, k)
		require.NoError(t, err)
		out[k] = string(data)
	}
	return out
}

// requireOwnedRefusal checks a run failed because the session is owner's.
func requireOwnedRefusal(t *testing.T, err error, owner client.WorkflowRun) {
	t.Helper()
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, contract.ErrTypeSessionOwned, appErr.Type(), "%v", err)
	require.Contains(t, appErr.Error(), "belongs to workflow "+owner.GetID()+" (first run "+owner.GetRunID()+")")
}

// TestSessionOwnership runs sessions on a real dev server with S3 storage
// on MinIO: a session belongs to the workflow that created it; reusing its
// id (a new workflow with its session_id, or its workflow id started again
// after it completed) and a concurrent second workflow are refused and
// change nothing, while the owner's own continue-as-new and reset go on.
func TestSessionOwnership(t *testing.T) {
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	srv := llmtest.Start(t, llmtest.Func(taskModel))
	st, _ := s3Store(t, minio, "owned")
	c := temporal.Client(t)
	w := worker.New(c, worker.Options{Store: st, Namespace: "default", HeartbeatEvery: time.Second})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	cfg := team(t, srv.URL(), "agent_a", "agent_b")
	ctx := context.Background()
	start := func(id string, in workflows.CoordinationInput) client.WorkflowRun {
		in.Config = cfg
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: worker.DefaultTaskQueue},
			contract.CoordinationName, in)
		require.NoError(t, err)
		return run
	}
	result := func(run client.WorkflowRun) (workflows.CoordinationResult, error) {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		var res workflows.CoordinationResult
		err := run.Get(wctx, &res)
		return res, err
	}
	twoSeen := func() bool {
		for _, r := range srv.Requests() {
			if r.Contains("TASK-TWO") {
				return true
			}
		}
		return false
	}

	t.Run("reuse after completion", func(t *testing.T) {
		x := start("own-x", workflows.CoordinationInput{Task: "TASK-ONE: name a colour."})
		res, err := result(x)
		require.NoError(t, err)
		require.Equal(t, "FINAL for ONE: answer to ONE", res.FinalAnswer)
		before := filesOf(t, storage.Sub(st, "own-x"))
		require.Contains(t, before, "config.json")
		require.Contains(t, before, "owner.json")

		// A new workflow naming X's session.
		y := start("own-y", workflows.CoordinationInput{Task: "TASK-TWO: name a fruit.", SessionID: "own-x"})
		_, err = result(y)
		requireOwnedRefusal(t, err, x)
		// X's workflow id started again after it completed.
		x2 := start("own-x", workflows.CoordinationInput{Task: "TASK-TWO: name a fruit."})
		require.NotEqual(t, x.GetRunID(), x2.GetRunID())
		_, err = result(x2)
		requireOwnedRefusal(t, err, x)

		require.Equal(t, before, filesOf(t, storage.Sub(st, "own-x")), "a refused run changed X's files")
		require.False(t, twoSeen(), "a refused run called the model")
	})

	t.Run("two workflows on one session", func(t *testing.T) {
		r1 := start("conc-1", workflows.CoordinationInput{Task: "TASK-TWO: name a fruit.", SessionID: "shared"})
		r2 := start("conc-2", workflows.CoordinationInput{Task: "TASK-THREE: name a tree.", SessionID: "shared"})
		res1, err1 := result(r1)
		res2, err2 := result(r2)
		require.True(t, (err1 == nil) != (err2 == nil), "exactly one may run: %v / %v", err1, err2)
		winner, res, loserErr, word, other := r1, res1, err2, "TWO", "THREE"
		if err1 != nil {
			winner, res, loserErr, word, other = r2, res2, err1, "THREE", "TWO"
		}
		requireOwnedRefusal(t, loserErr, winner)
		require.Equal(t, "FINAL for "+word+": answer to "+word, res.FinalAnswer)
		for k, v := range filesOf(t, storage.Sub(st, "shared")) {
			require.NotContains(t, v, "TASK-"+other, k)
			require.NotContains(t, v, "answer to "+other, k)
		}
		owner, err := session.ReadOwner(ctx, storage.Sub(st, "shared"))
		require.NoError(t, err)
		require.Equal(t, winner.GetID(), owner.WorkflowID)
		require.Equal(t, winner.GetRunID(), owner.FirstRunID)
	})

	t.Run("continue-as-new keeps the owner", func(t *testing.T) {
		run := start("own-can", workflows.CoordinationInput{Task: "TASK-ONE: name a colour.", MaxStepsBeforeContinue: 1})
		first := run.GetRunID() // Get follows the chain and moves GetRunID on
		res, err := result(run)
		require.NoError(t, err)
		require.Equal(t, coord.StatusConsensus, res.Status)
		require.Equal(t, "FINAL for ONE: answer to ONE", res.FinalAnswer)
		d, err := c.DescribeWorkflowExecution(ctx, "own-can", "")
		require.NoError(t, err)
		require.NotEqual(t, first, d.WorkflowExecutionInfo.Execution.RunId, "the session continued as new")
		require.Equal(t, first, d.WorkflowExecutionInfo.FirstRunId)
	})

	t.Run("reset of the owner goes on", func(t *testing.T) {
		run := start("own-reset", workflows.CoordinationInput{Task: "TASK-ONE: name a colour."})
		_, err := result(run)
		require.NoError(t, err)
		// Reset to the first workflow task: the new run creates the session
		// again, which is its own.
		var firstTask int64
		iter := c.GetWorkflowHistory(ctx, "own-reset", run.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() && firstTask == 0 {
			ev, err := iter.Next()
			require.NoError(t, err)
			if ev.GetEventType() == enums.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
				firstTask = ev.GetEventId()
			}
		}
		resp, err := c.ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
			Namespace:                 "default",
			WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: "own-reset", RunId: run.GetRunID()},
			Reason:                    "test: a reset keeps the session's owner",
			WorkflowTaskFinishEventId: firstTask,
			RequestId:                 "reset-own-reset",
		})
		require.NoError(t, err)
		res, err := result(c.GetWorkflow(ctx, "own-reset", resp.RunId))
		require.NoError(t, err, "the reset run of the owner was refused")
		require.Equal(t, "FINAL for ONE: answer to ONE", res.FinalAnswer)
	})
}

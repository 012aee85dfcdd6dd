//go:build integration

package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// TestHumanInputAndCancel sends human input to a running session (it
// reaches the running agent at its next safe point) and then cancels it:
// the stored answers stay and status.json says cancelled.
func TestHumanInputAndCancel(t *testing.T) {
	server := testenv.StartTemporal(t)
	dir := t.TempDir()
	st, err := storage.NewLocal(dir)
	require.NoError(t, err)

	sawInput := make(chan struct{}, 4)
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if r.Contains("Mention Ringo.") {
			sawInput <- struct{}{}
		}
		if agentOf(r.Model) == "agent_a" && !r.Contains("<agent1.") {
			return call("new_answer", map[string]string{"content": "A's answer"})
		}
		// agent_b keeps working (a tool call every 200 ms) until cancelled.
		return llmtest.Reply{Delay: 200 * time.Millisecond, ToolCalls: []llmtest.ToolCall{{ID: "l", Name: "list_files", Arguments: `{}`}}}
	}))
	c := server.Client(t)
	w := worker.New(c, worker.Options{Store: st, Namespace: "default", HeartbeatEvery: 200 * time.Millisecond})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	cfg := team(t, srv.URL(), "agent_a", "agent_b")
	cfg.Orchestrator.MaxEnforcementAttempts = 3
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "ctl-1", TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "Write about the Beatles.", Config: cfg})
	require.NoError(t, err)

	// Too long: rejected by the validator, nothing stored.
	rejected, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "ctl-1", UpdateName: contract.UpdateHumanInput,
		Args: []any{workflows.HumanInput{Text: strings.Repeat("x", contract.MaxHumanInputBytes+1)}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = rejected.Get(ctx, nil)
	}
	require.ErrorContains(t, err, "more than the 8192 allowed")

	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "ctl-1", UpdateName: contract.UpdateHumanInput,
		Args: []any{workflows.HumanInput{Text: "Mention Ringo."}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	var seq int
	require.NoError(t, h.Get(ctx, &seq))
	require.Equal(t, 1, seq)
	select {
	case <-sawInput:
	case <-time.After(time.Minute):
		t.Fatal("the human input never reached a running agent")
	}
	inbox, err := st.Get(ctx, "ctl-1/"+session.InboxKey(1))
	require.NoError(t, err)
	require.Contains(t, string(inbox), "Mention Ringo.")

	require.NoError(t, c.CancelWorkflow(ctx, "ctl-1", ""))
	err = run.Get(ctx, nil)
	var canceled *temporal.CanceledError
	require.True(t, errors.As(err, &canceled), "%v", err)

	snap, err := session.Load(ctx, storage.Sub(st, "ctl-1"))
	require.NoError(t, err)
	a, _ := snap.Agent("agent_a")
	require.Equal(t, "A's answer", a.Latest().Text, "cancellation keeps stored answers")
	require.Eventually(t, func() bool {
		data, err := st.Get(ctx, "ctl-1/status.json")
		return err == nil && strings.Contains(string(data), `"phase": "cancelled"`)
	}, 30*time.Second, 100*time.Millisecond)
}

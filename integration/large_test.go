//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// maxHistoryBytes bounds the history of a session at the limits: the task
// is in it twice (the start input and InitSession's input, each at most
// contract.MaxTaskBytes = 1.5 MiB), everything else is ids, previews and
// status snapshots. 4 MiB is also the gRPC message limit a workflow task
// that fetches the whole history must stay under.
const maxHistoryBytes = 4 << 20

// TestLargeInputs runs sessions at the documented limits on a real dev
// server: a 1.5 MiB task with 8 agents, and 64 and 200 agents with a
// short task complete, and their histories stay under maxHistoryBytes (steps carry a
// hash of the stored inputs, not the task and config). Above the limits
// the start is refused with an error naming the limit.
func TestLargeInputs(t *testing.T) {
	dev := testenv.StartTemporal(t)
	srv := llmtest.Start(t, llmtest.Func(taskModel))
	st, err := storage.NewLocal(t.TempDir())
	require.NoError(t, err)
	c := dev.Client(t)
	w := worker.New(c, worker.Options{Store: st, Namespace: "default", HeartbeatEvery: time.Second})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	ctx := context.Background()

	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("agent_%02d", i)
		}
		return out
	}
	bigTask := "TASK-ONE: summarise this. " + strings.Repeat("x", contract.MaxTaskBytes-len("TASK-ONE: summarise this. "))
	run := func(id string, in workflows.CoordinationInput) (workflows.CoordinationResult, error) {
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: worker.DefaultTaskQueue},
			contract.CoordinationName, in)
		require.NoError(t, err)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		var res workflows.CoordinationResult
		return res, r.Get(wctx, &res)
	}
	historySize := func(id string) int64 {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err)
		return d.WorkflowExecutionInfo.GetHistorySizeBytes()
	}

	for _, tc := range []struct {
		name   string
		task   string
		agents int
	}{
		{"large-task-8-agents", bigTask, 8},
		{"short-task-64-agents", "TASK-ONE: name a colour.", 64},
		{"short-task-max-agents", "TASK-ONE: name a colour.", contract.MaxAgents},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := run(tc.name, workflows.CoordinationInput{Task: tc.task, Config: team(t, srv.URL(), ids(tc.agents)...)})
			require.NoError(t, err)
			require.Equal(t, coord.StatusConsensus, res.Status)
			require.Equal(t, "FINAL for ONE: answer to ONE", res.FinalAnswer)
			size := historySize(tc.name)
			t.Logf("%s: task %d bytes, %d agents: history %d bytes (%.2f MiB)", tc.name, len(tc.task), tc.agents, size, float64(size)/(1<<20))
			require.Less(t, size, int64(maxHistoryBytes))
		})
	}

	t.Run("above the limits", func(t *testing.T) {
		for _, tc := range []struct {
			name, task, want string
			agents           int
		}{
			{"task-too-large", bigTask + "x", "task: 1572865 bytes, at most 1572864", 2},
			{"too-many-agents", "TASK-ONE: name a colour.", fmt.Sprintf("config.agents: %d agents, at most %d", contract.MaxAgents+1, contract.MaxAgents), contract.MaxAgents + 1},
		} {
			// The config loader refuses a team above the limit itself, so the
			// oversized team is built past it: the workflow must refuse too.
			cfg := team(t, srv.URL(), ids(min(tc.agents, contract.MaxAgents))...)
			for i := len(cfg.Agents); i < tc.agents; i++ {
				extra := cfg.Agents[0]
				extra.ID = fmt.Sprintf("extra%03d", i)
				cfg.Agents = append(cfg.Agents, extra)
			}
			_, err := run(tc.name, workflows.CoordinationInput{Task: tc.task, Config: cfg})
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.Equal(t, contract.ErrTypeInvalidInput, appErr.Type())
			require.Contains(t, appErr.Error(), tc.want)
		}
	})
}

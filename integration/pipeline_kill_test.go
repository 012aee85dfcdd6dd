//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/pipelinetest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// TestPipelineWorkerKilledMidStep kills the worker process while step s2's
// second model call is in flight; a new worker resumes s2 from its
// checkpoint: its first call (the file write) is not made again, the file
// is in s2's stored workspace, and the run completes.
func TestPipelineWorkerKilledMidStep(t *testing.T) {
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	st, url := s3Store(t, minio, "pipekill")

	inFlight := make(chan struct{}, 1)
	secondCallOfS2 := func(r llmtest.Request) bool {
		return pipelinetest.StepOf(r) == "s2" && r.Last().Role == "tool"
	}
	agent := pipelinetest.NewAgent()
	srv := llmtest.Start(t,
		llmtest.Func(func(llmtest.Request) llmtest.Reply {
			inFlight <- struct{}{}
			return llmtest.Reply{Delay: 10 * time.Minute}
		}).If(secondCallOfS2).Once(),
		agent.Rule(),
	)
	dir := t.TempDir()
	require.NoError(t, pipelinetest.WriteScenario(dir, 3, 100))
	def, err := pipeline.LoadScenario(dir, &config.Backend{Type: "openai", Model: "m-builder", BaseURL: srv.URL()})
	require.NoError(t, err)

	c := temporal.Client(t)
	first := startWorker(t, bin, temporal.HostPort, url)
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "pipekill-1", TaskQueue: worker.DefaultTaskQueue},
		contract.PipelineName, workflows.PipelineInput{Input: "Build it", StepHeartbeatSeconds: 3,
			Definition: contract.PipelineDefinition{Title: def.Title, Graph: def.Graph, Context: def.Context, Backend: def.Backend}})
	require.NoError(t, err)
	replaceWorkerWhenHung(t, inFlight, first, bin, temporal.HostPort, url, "s2's second model call never arrived")

	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var res contract.PipelineResult
	require.NoError(t, run.Get(wctx, &res))
	require.Equal(t, workflows.PipelineCompleted, res.Status)
	require.Equal(t, []string{"s1:completed", "s2:completed", "s3:completed"}, stepStatuses(res))

	writes, completes := 0, 0
	for _, r := range srv.Requests() {
		if pipelinetest.StepOf(r) != "s2" {
			continue
		}
		if r.Last().Role == "tool" {
			completes++
		} else {
			writes++
		}
	}
	require.Equal(t, 1, writes, "a completed model call was repeated")
	require.Equal(t, 2, completes, "the call in flight at the kill is made again")
	data, err := st.Get(ctx, "pipekill-1/steps/002-s2/workspace/s2.md")
	require.NoError(t, err, "the write made before the kill is in the stored workspace")
	require.Contains(t, string(data), "s2 done")
	keys, err := st.List(ctx, "pipekill-1/steps/")
	require.NoError(t, err)
	folders := map[string]bool{}
	for _, k := range keys {
		folders[k[len("pipekill-1/steps/"):][:6]] = true
	}
	require.Equal(t, map[string]bool{"001-s1": true, "002-s2": true, "003-s3": true}, folders, "one folder per step")
}

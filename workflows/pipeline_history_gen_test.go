//go:build historygen

package workflows

// Regenerates testdata/pipeline_history.json with the real pipeline
// activities on a local store and the scripted model: a call that returns,
// a failed step that on_failure continues past, a coordination step (a
// child Coordination session of two agents), and a completed run.
//
//	go test -tags historygen -run TestGeneratePipelineHistory ./workflows/

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func TestGeneratePipelineHistory(t *testing.T) {
	bin, addr, cl := historyServer(t)
	h := newPipelineHarness(t,
		llmtest.Text("main finished after lint").IfLastContains("[Called step completed"),
		llmtest.Call("call_step", `{"step":"lint"}`).IfContains("# Step: main"),
		llmtest.Call("complete_step", `{"status":"fail","error":"two warnings"}`).IfContains("# Step: lint"),
		llmtest.Call("write_file", `{"path":"out.txt","content":"done"}`).IfContains("# Step: export").Once(),
		llmtest.Call("complete_step", `{"status":"pass","evidencePaths":["out.txt"]}`).IfContains("# Step: export"),
		llmtest.Call("new_answer", `{"content":"FINAL: ship it"}`).IfContains("present the final answer"),
		llmtest.Call("vote", `{"agent_id":"agent1","reason":"clear"}`).IfTool("vote").IfContains("agent1"),
		llmtest.Call("new_answer", `{"content":"review: looks good"}`).IfTool("new_answer"),
	)
	team, perr := config.Parse([]byte("agents:\n  - {id: r1, backend: {type: openai, model: m-r1, base_url: "+h.srv.URL()+"}}\n"+
		"  - {id: r2, backend: {type: openai, model: m-r2, base_url: "+h.srv.URL()+"}}\n"), "team.yaml")
	require.NoError(t, perr)
	const queue = "conclave-history"
	w := worker.New(cl, queue, worker.Options{})
	Register(w)
	w.RegisterActivity(h.acts)
	require.NoError(t, w.Start())
	defer w.Stop()

	g := pipeline.Graph{Start: "main", Steps: []pipeline.Step{
		{Name: "main", Prompt: "Write the code.", Next: "export", Destinations: []string{"lint"}},
		{Name: "lint", Prompt: "Lint the code.", OnFailure: pipeline.OnFailureContinue},
		{Name: "export", Prompt: "Export.", Tools: []string{"write_file"}, Next: "review"},
		{Name: "review", Prompt: "Review the export.", Kind: pipeline.KindCoordination, Team: team},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "pipeline-history-1", TaskQueue: queue},
		contract.PipelineName, PipelineInput{Definition: contract.PipelineDefinition{Title: "history", Graph: g, Backend: h.backend()}, Input: "a CLI"})
	require.NoError(t, err)
	var r contract.PipelineResult
	require.NoError(t, run.Get(ctx, &r))
	require.Equal(t, PipelineCompleted, r.Status)
	require.Equal(t, []pipeline.Status{pipeline.CallPending, pipeline.Failed, pipeline.Completed, pipeline.Completed, pipeline.Completed}, statuses(r))
	writeHistory(t, bin, addr, run.GetID(), "pipeline_history.json")
}

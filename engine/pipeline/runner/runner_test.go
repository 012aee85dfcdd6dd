package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/agent/agenttest"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func graph() pipeline.Graph {
	return pipeline.Graph{Start: "main", Steps: []pipeline.Step{
		{Name: "main", Prompt: "Write the code.", Tools: []string{"write_file", "read_file"}, Next: "lint", Destinations: []string{"lint"}},
		{Name: "lint", Prompt: "Lint it."},
		{Name: "export", Prompt: "Export it."},
	}}
}

func input(t *testing.T, srv *llmtest.Server, step string) Input {
	t.Helper()
	m, err := llm.New(llm.Config{Model: "m", BaseURL: srv.URL()}, "test-key")
	require.NoError(t, err)
	return Input{Graph: graph(), Step: step, Task: "a CLI", Workspace: t.TempDir(), Model: m, ModelName: "m"}
}

func TestDestinationNotAllowedIsAToolError(t *testing.T) {
	srv := llmtest.Start(t,
		llmtest.Call("jump_to_step", `{"step":"export"}`).Once(),
		llmtest.Text("done without jumping"),
	)
	out, tr, err := Run(context.Background(), input(t, srv, "main"))
	require.NoError(t, err)
	require.Equal(t, pipeline.Completed, out.Status)
	require.Nil(t, out.Request)
	tool := tr.Messages[3]
	require.Equal(t, llm.RoleTool, tool.Role)
	require.Contains(t, tool.Content, `"export" is not a destination of step "main"; use one of: lint`)
	// The model saw the error before its next call.
	require.Contains(t, srv.Requests()[1].Last().Content, "not a destination")
}

func TestJumpEndsTheStep(t *testing.T) {
	srv := llmtest.Start(t, llmtest.Call("jump_to_step", `{"step":"lint"}`))
	out, _, err := Run(context.Background(), input(t, srv, "main"))
	require.NoError(t, err)
	require.Equal(t, pipeline.Completed, out.Status)
	require.Equal(t, &pipeline.Request{Kind: pipeline.KindJump, Target: "lint"}, out.Request)
	require.Equal(t, 1, srv.Count())
}

func TestCompleteStepNeedsRealEvidence(t *testing.T) {
	srv := llmtest.Start(t,
		llmtest.Call("complete_step", `{"status":"pass","evidencePaths":["report.txt"]}`).Once(),
		llmtest.Call("write_file", `{"path":"report.txt","content":"ok"}`).Once(),
		llmtest.Call("complete_step", `{"status":"pass","evidencePaths":["report.txt"]}`),
	)
	in := input(t, srv, "main")
	out, _, err := Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, pipeline.Completed, out.Status)
	require.Equal(t, []string{"report.txt"}, out.Evidence)
	require.Contains(t, srv.Requests()[1].Last().Content, `evidencePaths "report.txt" is not a file in the workspace`)
	require.Equal(t, 3, srv.Count())
}

func TestFailAndMaxIterations(t *testing.T) {
	srv := llmtest.Start(t, llmtest.Call("complete_step", `{"status":"fail","error":"tests fail"}`))
	out, _, err := Run(context.Background(), input(t, srv, "lint"))
	require.NoError(t, err)
	require.Equal(t, pipeline.Failed, out.Status)
	require.Equal(t, "tests fail", out.Error)

	srv = llmtest.Start(t, llmtest.Call("read_file", `{"path":"nothing"}`))
	in := input(t, srv, "main")
	in.Graph.Steps[0].MaxIterations = 2
	out, _, err = Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, pipeline.MaxIterations, out.Status)
	require.Equal(t, 2, srv.Count())
}

func TestResumeRepeatsNoCompletedCall(t *testing.T) {
	// The first attempt checkpoints after its write, then "dies" (the
	// model fails); the retry rebuilds the workspace from the transcript
	// and goes on from the next call.
	srv := llmtest.Start(t,
		llmtest.Call("write_file", `{"path":"a.txt","content":"A"}`).Once(),
		llmtest.Fail(400, "bad request").Once(),
		llmtest.Call("complete_step", `{"status":"pass","evidencePaths":["a.txt"]}`),
	)
	in := input(t, srv, "main")
	var saved *Transcript
	in.Checkpoint = func(_ context.Context, t *Transcript) error { c := *t; saved = &c; return nil }
	_, _, err := Run(context.Background(), in)
	require.Error(t, err)
	require.Equal(t, 1, saved.Turns)

	in.Workspace = t.TempDir() // a new worker: the old workspace is gone
	in.Prior = agenttest.Stored(t, saved)
	out, _, err := Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, pipeline.Completed, out.Status)
	data, err := os.ReadFile(filepath.Join(in.Workspace, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "A", string(data))
	require.Equal(t, 3, srv.Count(), "the write is not asked for again")

	// A finished transcript returns its outcome without a model call.
	in.Prior = agenttest.Stored(t, saved)
	again, _, err := Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, out.Status, again.Status)
	require.Equal(t, 3, srv.Count())
}

// A model that keeps calling a tool the step does not offer fails the step
// after MaxUnknownToolReplies replies instead of spending max_iterations.
func TestUnknownToolsFailTheStep(t *testing.T) {
	srv := llmtest.Start(t, llmtest.Call("run_shell", `{"cmd":"ls"}`))
	out, _, err := Run(context.Background(), input(t, srv, "main"))
	require.NoError(t, err)
	require.Equal(t, pipeline.Failed, out.Status)
	require.Contains(t, out.Error, `"run_shell"`)
	require.Equal(t, MaxUnknownToolReplies, srv.Count())
}

// Seed 004's step agent answers with only { status, evidencePaths, error }:
// that answer is the step's result, as complete_step's arguments are; an
// invalid one is sent back to the model.
func TestJSONAnswerIsTheStepResult(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rules    []llmtest.Rule
		status   pipeline.Status
		evidence []string
		err      string
		calls    int
	}{
		{"fail", []llmtest.Rule{llmtest.Text(`{"status": "fail", "evidencePaths": [], "error": "the login button does nothing"}`)},
			pipeline.Failed, nil, "the login button does nothing", 1},
		{"pass in a fence", []llmtest.Rule{
			llmtest.Call("write_file", `{"path":"shot.png","content":"png"}`).Once(),
			llmtest.Text("```json\n{\"status\":\"pass\",\"evidencePaths\":[\"shot.png\"],\"error\":null}\n```"),
		}, pipeline.Completed, []string{"shot.png"}, "", 2},
		{"evidence that is not a file", []llmtest.Rule{
			llmtest.Text(`{"status":"pass","evidencePaths":["missing.png"]}`).Once(),
			llmtest.Text(`{"status":"pass","evidencePaths":[]}`),
		}, pipeline.Completed, nil, "", 2},
		{"fail without an error", []llmtest.Rule{
			llmtest.Text(`{"status":"fail"}`).Once(),
			llmtest.Text(`{"status":"fail","error":"no title"}`),
		}, pipeline.Failed, nil, "no title", 2},
		{"prose passes", []llmtest.Rule{llmtest.Text("All done: {not a result}")}, pipeline.Completed, nil, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.Start(t, tc.rules...)
			out, _, err := Run(context.Background(), input(t, srv, "main"))
			require.NoError(t, err)
			require.Equal(t, tc.status, out.Status)
			require.ElementsMatch(t, tc.evidence, out.Evidence)
			require.Equal(t, tc.err, out.Error)
			require.Equal(t, tc.calls, srv.Count())
			if tc.calls == 2 && tc.evidence == nil {
				require.Contains(t, srv.Requests()[1].Last().Content, "Answer again with a valid result")
			}
		})
	}
}

// A checkpoint written before the step result used seed 004's names
// records "evidence"; it is resumed with its evidence.
func TestOutcomeReadsItsFormerEvidenceName(t *testing.T) {
	var o Outcome
	require.NoError(t, json.Unmarshal([]byte(`{"status":"completed","evidence":["a.txt"]}`), &o))
	require.Equal(t, []string{"a.txt"}, o.Evidence)
	data, err := json.Marshal(o)
	require.NoError(t, err)
	require.Contains(t, string(data), `"evidencePaths":["a.txt"]`)
}

// A model that keeps calling the step's own tools with arguments they
// refuse fails the step after 5 replies in a row,
// instead of spending max_iterations; a reply that does something else
// (a valid call) starts the count again.
func TestInvalidStepCallsFailTheStep(t *testing.T) {
	srv := llmtest.Start(t, llmtest.Call(pipeline.ToolComplete, `{"status":"pass","extra":1}`))
	out, _, err := Run(context.Background(), input(t, srv, "main"))
	require.NoError(t, err)
	require.Equal(t, pipeline.Failed, out.Status)
	require.Contains(t, out.Error, "replies in a row of refused step tool calls")
	require.Contains(t, out.Error, pipeline.ToolComplete)
	require.Equal(t, MaxInvalidCallReplies, srv.Count())

	srv = llmtest.Start(t,
		llmtest.Call(pipeline.ToolComplete, `{"status":"maybe"}`).Times(MaxInvalidCallReplies-1),
		llmtest.Call("list_files", `{}`).Once(),
		llmtest.Call(pipeline.ToolComplete, `{"status":"maybe"}`).Times(MaxInvalidCallReplies-1),
		llmtest.Call(pipeline.ToolComplete, `{"status":"pass"}`))
	out, _, err = Run(context.Background(), input(t, srv, "main"))
	require.NoError(t, err)
	require.Equal(t, pipeline.Completed, out.Status, "the count starts again after a valid call")
}

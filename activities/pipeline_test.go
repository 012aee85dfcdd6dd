package activities

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/engine/pipeline/runner"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func pipelineStepInput() contract.PipelineStepInput {
	g := pipeline.Graph{Start: "build", Steps: []pipeline.Step{{Name: "build", Prompt: "Build.", Tools: []string{"write_file"}}}}
	return contract.PipelineStepInput{RunID: "run-1", Seq: 1, Step: "build", Graph: g, Input: "x",
		Backend: &config.Backend{Type: "openai", Model: "m"}}
}

// ownRun creates in's run for a test owner, as a Pipeline workflow's
// first activity does, and returns in with the run's ref.
func ownRun(t *testing.T, acts *Activities, env *testsuite.TestActivityEnvironment, in contract.PipelineStepInput) contract.PipelineStepInput {
	t.Helper()
	owner := &contract.Owner{WorkflowID: in.RunID, FirstRunID: "first"}
	v, err := env.ExecuteActivity(acts.InitPipeline, contract.InitPipelineInput{RunID: in.RunID, Input: in.Input,
		Definition: contract.PipelineDefinition{Graph: in.Graph, Backend: in.Backend}, Owner: *owner})
	require.NoError(t, err)
	var res contract.InitPipelineResult
	require.NoError(t, v.Get(&res))
	in.SessionRef = contract.SessionRef{Owner: owner, Location: res.Location}
	return in
}

// A retried PipelineStep resumes its checkpoint: the workspace is rebuilt
// from the transcript and no answered model call is made again.
func TestPipelineStepResumesCheckpoint(t *testing.T) {
	acts, env, _, st := setup(t,
		llmtest.Call("write_file", `{"path":"out.txt","content":"built"}`).Once(),
		llmtest.Fail(400, "the worker died here").Once(),
		llmtest.Call("complete_step", `{"status":"pass","evidence":["out.txt"]}`),
	)
	in := ownRun(t, acts, env, pipelineStepInput())
	_, err := env.ExecuteActivity(acts.PipelineStep, in)
	require.Error(t, err)
	_, err = st.Get(context.Background(), "run-1/steps/001-build/trace.jsonl")
	require.NoError(t, err, "the first attempt checkpointed")

	v, err := env.ExecuteActivity(acts.PipelineStep, in)
	require.NoError(t, err)
	var res contract.PipelineStepResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, pipeline.Completed, res.Status)
	require.Equal(t, []string{"steps/001-build/workspace/out.txt"}, res.Evidence)
	data, err := st.Get(context.Background(), "run-1/steps/001-build/workspace/out.txt")
	require.NoError(t, err)
	require.Equal(t, "built", string(data))
	// A retry after the step finished returns the stored outcome.
	v, err = env.ExecuteActivity(acts.PipelineStep, in)
	require.NoError(t, err)
	var again contract.PipelineStepResult
	require.NoError(t, v.Get(&again))
	require.Equal(t, res.Status, again.Status)
}

// warnings records what the worker's log is told.
type warnings struct {
	log.Logger
	got []string
}

func (w *warnings) Warn(msg string, _ ...any) { w.got = append(w.got, msg) }

// A damaged checkpoint is not resumed and does not stop the step: it is
// kept aside, the worker's log says why, and the step starts fresh.
func TestPipelineStepStartsFreshFromADamagedCheckpoint(t *testing.T) {
	acts, _, _, st := setup(t, llmtest.Text("done"))
	rec := &warnings{Logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler))}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(rec)
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	ctx := context.Background()
	in := ownRun(t, acts, env, pipelineStepInput())
	require.NoError(t, st.Put(ctx, "run-1/steps/001-build/trace.jsonl", []byte("{not json")))
	v, err := env.ExecuteActivity(acts.PipelineStep, in)
	require.NoError(t, err)
	var res contract.PipelineStepResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, pipeline.Completed, res.Status)
	require.Equal(t, 1, res.Turns, "the model was asked again")
	kept := agent.UnusableKey("steps/001-build/trace.jsonl", []byte("{not json"))
	data, err := st.Get(ctx, "run-1/"+kept)
	require.NoError(t, err)
	require.Equal(t, "{not json", string(data), "the damaged checkpoint is kept")
	require.Len(t, rec.got, 1)
	require.Contains(t, rec.got[0], "it is damaged: trace line 1")
	require.Contains(t, rec.got[0], "kept as "+kept)
}

// A folder checkpointed before trace.jsonl holds trace.json, which is never
// read: the step starts fresh and checkpoints in the current format.
func TestPipelineStepIgnoresOldCheckpoint(t *testing.T) {
	acts, env, _, st := setup(t, llmtest.Text("done"))
	old := `{"messages":[{"role":"system","content":"s"},{"role":"assistant","content":"old"}],"turns":1,"final":{"status":"failed"}}`
	in := ownRun(t, acts, env, pipelineStepInput())
	require.NoError(t, st.Put(context.Background(), "run-1/steps/001-build/trace.json", []byte(old)))
	v, err := env.ExecuteActivity(acts.PipelineStep, in)
	require.NoError(t, err)
	var res contract.PipelineStepResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, pipeline.Completed, res.Status)
	require.Equal(t, "done", res.Summary, "the old checkpoint's failure is not returned")
	_, err = st.Get(context.Background(), "run-1/steps/001-build/trace.jsonl")
	require.NoError(t, err)
}

func TestPipelineStepRejectsBadRunID(t *testing.T) {
	acts, env, _, _ := setup(t, llmtest.Text("done"))
	in := pipelineStepInput()
	in.RunID = "../escape"
	_, err := env.ExecuteActivity(acts.PipelineStep, in)
	require.ErrorContains(t, err, "cannot name a storage folder")
}

// A pipeline run belongs to the workflow that created it, as a session
// does: a reused run id (another first run) is refused by InitPipeline and
// by every activity that writes the run, and nothing stored changes; the
// owner's own retry goes on, and a run made before owners is refused too.
func TestPipelineRunOwnership(t *testing.T) {
	acts, env, _, st := setup(t, llmtest.Call("complete_step", `{"status":"pass"}`))
	x := &contract.Owner{WorkflowID: "run-1", FirstRunID: "first-1"}
	other := &contract.Owner{WorkflowID: "run-1", FirstRunID: "first-2"}
	step := pipelineStepInput()
	init := func(owner *contract.Owner, input string) (contract.InitPipelineResult, error) {
		v, err := env.ExecuteActivity(acts.InitPipeline, contract.InitPipelineInput{RunID: "run-1",
			Definition: contract.PipelineDefinition{Graph: step.Graph, Backend: step.Backend}, Input: input, Owner: *owner})
		var res contract.InitPipelineResult
		if err == nil {
			require.NoError(t, v.Get(&res))
		}
		return res, err
	}
	res, err := init(x, "Temporal")
	require.NoError(t, err)
	_, err = init(x, "Temporal")
	require.NoError(t, err, "the owner's retry goes on")
	ref := contract.SessionRef{Owner: x, Location: res.Location}
	step.SessionRef = ref
	_, err = env.ExecuteActivity(acts.PipelineStep, step)
	require.NoError(t, err)
	_, err = env.ExecuteActivity(acts.WritePipelineResult, contract.WritePipelineResultInput{RunID: "run-1", SessionRef: ref,
		Result: contract.PipelineResult{RunID: "run-1", Status: "completed"}})
	require.NoError(t, err)
	before := snapshotFiles(t, st)

	_, err = init(other, "Bananas")
	require.Equal(t, contract.ErrTypeSessionOwned, appError(t, err).Type())
	require.ErrorContains(t, err, `pipeline run "run-1"`)
	require.ErrorContains(t, err, "belongs to workflow run-1 (first run first-1), not to workflow run-1 (first run first-2)")
	_, err = init(x, "Bananas")
	require.ErrorContains(t, err, "created by this workflow with other inputs")

	bad := contract.SessionRef{Owner: other, Location: res.Location}
	step.SessionRef, step.Input = bad, "Bananas"
	_, err = env.ExecuteActivity(acts.PipelineStep, step)
	require.Equal(t, contract.ErrTypeSessionOwned, appError(t, err).Type())
	_, err = env.ExecuteActivity(acts.WritePipelineResult, contract.WritePipelineResultInput{RunID: "run-1", SessionRef: bad})
	require.Equal(t, contract.ErrTypeSessionOwned, appError(t, err).Type())
	_, err = env.ExecuteActivity(acts.AdoptSession, contract.AdoptSessionInput{RunID: "run-1", SessionRef: bad, Folder: "steps/002-x", Session: "run-1.002-x"})
	require.Equal(t, contract.ErrTypeSessionOwned, appError(t, err).Type())
	_, err = env.ExecuteActivity(acts.PipelineReuse, contract.PipelineReuseInput{RunID: "run-1", SessionRef: bad, From: "run-0"})
	require.Equal(t, contract.ErrTypeSessionOwned, appError(t, err).Type())
	require.Equal(t, before, snapshotFiles(t, st), "nothing stored changed")

	// A folder with pipeline.json and no owner (made by hand or another
	// tool) is not taken over either.
	require.NoError(t, session.WriteJSON(context.Background(), storage.Sub(st, "old"), session.PipelineDefKey, map[string]string{"input": "Temporal"}))
	_, err = env.ExecuteActivity(acts.InitPipeline, contract.InitPipelineInput{RunID: "old",
		Definition: contract.PipelineDefinition{Graph: step.Graph, Backend: step.Backend}, Input: "Bananas", Owner: *x})
	require.Equal(t, contract.ErrTypeSessionOwned, appError(t, err).Type())
	require.ErrorContains(t, err, "without an owner")
}

// The project summary is made once per run: a document without the keys
// the extraction reads costs one model call, which a retried init and a
// run resuming this one reuse (context.json); another document is
// summarised again.
func TestInitPipelineSummarisesOncePerRun(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	acts, env, _, st := setup(t, llmtest.Func(func(req llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if req.Messages[0].Content == runner.SummaryInstruction {
			calls++
		}
		return llmtest.Reply{Text: "App type: note-sharing web app\nBase URL: unknown\nCredentials: unknown\nStack: Go"}
	}))
	doc := strings.Repeat("The team wants a faster way to share notes with each other. ", 40)
	def := pipelineStepInput()
	init := func(run, from, doc string) contract.InitPipelineResult {
		t.Helper()
		v, err := env.ExecuteActivity(acts.InitPipeline, contract.InitPipelineInput{RunID: run, ResumeFrom: from, Input: "x",
			Definition: contract.PipelineDefinition{Graph: def.Graph, Backend: def.Backend, Context: doc},
			Owner:      contract.Owner{WorkflowID: run, FirstRunID: "first"}})
		require.NoError(t, err)
		var res contract.InitPipelineResult
		require.NoError(t, v.Get(&res))
		require.NotNil(t, res.Summary)
		return res
	}
	want := pipeline.ProjectSummary{AppType: "note-sharing web app", Stack: "Go"}
	res := init("run-1", "", doc)
	require.Equal(t, want, *res.Summary)
	require.Positive(t, res.Usage.InputTokens)
	require.Equal(t, 1, calls)
	require.Equal(t, want, *init("run-1", "", doc).Summary, "a retried init")
	require.Equal(t, want, *init("run-2", "run-1", doc).Summary, "a resumed run")
	require.Equal(t, 1, calls, "neither summarised again")
	_, err := st.Get(context.Background(), "run-2/"+session.PipelineContextKey)
	require.NoError(t, err, "the resumed run keeps its own copy")
	init("run-3", "run-1", doc+" It changed.")
	require.Equal(t, 2, calls, "another document is summarised again")
}

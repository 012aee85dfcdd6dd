package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/pipeline"
)

// Run statuses of a pipeline besides the step statuses.
const (
	PipelineRunning   = "running"
	PipelineCompleted = "completed"
)

// PipelineInput starts a pipeline run. The run id is the workflow id, and
// the run's files live under <storage>/<run_id>/.
type PipelineInput struct {
	Definition contract.PipelineDefinition `json:"definition"`
	// Input is the user's request, given to every step.
	Input string `json:"input"`
	// ResumeFrom is an earlier run whose leading completed steps this run
	// reuses instead of running them again.
	ResumeFrom           string `json:"resume_from,omitempty"`
	StepHeartbeatSeconds int    `json:"step_heartbeat_seconds,omitempty"`

	// decodeErr is why the JSON input could not be decoded (see
	// CoordinationInput.decodeErr): the run fails with it as invalid input.
	decodeErr string
}

// UnmarshalJSON decodes the input strictly, as CoordinationInput's does,
// keeping what is wrong for the workflow to report instead of failing its
// task over and over.
func (in *PipelineInput) UnmarshalJSON(data []byte) error {
	type plain PipelineInput
	var p plain
	if err := strictUnmarshal(data, &p); err != "" {
		*in = PipelineInput{decodeErr: err}
		return nil
	}
	*in = PipelineInput(p)
	return nil
}

// Pipeline walks a step graph (engine/pipeline): each step is one
// PipelineStep activity with an isolated context, or a Coordination child
// workflow for a coordination step. result.json is written after every
// step. A run that does not complete fails with contract.ErrTypePipelineFailed and
// its result as details, so the Web UI shows it as failed.
func Pipeline(ctx workflow.Context, in PipelineInput) (contract.PipelineResult, error) {
	info := workflow.GetInfo(ctx)
	runID := info.WorkflowExecution.ID
	if err := checkPipelineInput(in); err != nil {
		return contract.PipelineResult{}, err
	}
	p := &pipelineRun{in: in, runID: runID, graph: in.Definition.Graph, state: pipeline.Begin(in.Definition.Graph), status: PipelineRunning}
	p.ref.Owner = &contract.Owner{WorkflowID: runID, FirstRunID: info.FirstRunID}
	if err := workflow.SetQueryHandler(ctx, contract.QueryProgress, func() (contract.PipelineResult, error) {
		return p.result(), nil
	}); err != nil {
		return contract.PipelineResult{}, err
	}
	if err := workflow.SetQueryHandler(ctx, contract.QueryInput, func() (PipelineInput, error) { return in, nil }); err != nil {
		return contract.PipelineResult{}, err
	}
	if err := p.init(ctx); err != nil {
		return p.result(), err
	}
	for !p.state.Done {
		if err := p.step(ctx); err != nil {
			return p.result(), err
		}
	}
	return p.finish(ctx)
}

// checkPipelineInput reports an input that cannot be decoded, or whose own
// settings are out of range. The definition and input are checked by
// InitPipeline, whose result is in history (contract.CheckPipeline).
func checkPipelineInput(in PipelineInput) error {
	var problems []string
	if in.decodeErr != "" {
		problems = append(problems, in.decodeErr)
	}
	if in.StepHeartbeatSeconds < 0 {
		problems = append(problems, "step_heartbeat_seconds: must be positive or left out")
	}
	if len(problems) > 0 {
		return temporal.NewNonRetryableApplicationError("invalid pipeline input: "+strings.Join(problems, "; "), contract.ErrTypeInvalidInput, nil)
	}
	return nil
}

type pipelineRun struct {
	in    PipelineInput
	runID string
	// ref is the run's owner and, once InitPipeline
	// made it, its location: what every writing activity checks.
	ref contract.SessionRef
	// initFailed: the run's folder is another's (InitPipeline refused it
	// as SessionOwned), so the run writes nothing there.
	initFailed bool
	graph      pipeline.Graph
	state      pipeline.State
	status     string
	location   string
	// project is the run's project summary.
	project *pipeline.ProjectSummary
	entries []contract.PipelineStepEntry
	usage   coord.Usage
	// last is the latest step; from the latest folder with a workspace.
	last *contract.PipelineStepResult
	from string
}

func (p *pipelineRun) init(ctx workflow.Context) error {
	var res contract.InitPipelineResult
	err := workflow.ExecuteActivity(storageActivityCtx(ctx, "init pipeline", 5*time.Minute), contract.NameInitPipeline, contract.InitPipelineInput{
		RunID: p.runID, Definition: p.in.Definition, Input: p.in.Input, ResumeFrom: p.in.ResumeFrom, Owner: *p.ref.Owner,
	}).Get(ctx, &res)
	if err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == contract.ErrTypeInvalidInput {
			p.initFailed = true // nothing was stored: the run has no folder to write
			return temporal.NewNonRetryableApplicationError(app.Message(), contract.ErrTypeInvalidInput, nil)
		}
		p.initFailed = errors.As(err, &app) && app.Type() == contract.ErrTypeSessionOwned
		return p.end(ctx, string(pipeline.Error), "init: "+failureMessage(err))
	}
	p.location, p.project = res.Location, res.Summary
	p.ref.Location = res.Location
	p.usage = p.usage.Add(res.Usage)
	if p.in.ResumeFrom == "" {
		return nil
	}
	var reuse contract.PipelineReuseResult
	err = workflow.ExecuteActivity(storageActivityCtx(ctx, "reuse steps of "+p.in.ResumeFrom, 5*time.Minute), contract.NamePipelineReuse,
		contract.PipelineReuseInput{RunID: p.runID, SessionRef: p.ref, From: p.in.ResumeFrom}).Get(ctx, &reuse)
	if err != nil {
		return p.end(ctx, string(pipeline.Error), "resume: "+failureMessage(err))
	}
	for _, r := range reuse.Steps {
		// A step is reused only where this run's graph takes the same path.
		if p.state.Done || r.Step != p.state.Current || r.Seq != p.state.Seq+1 {
			break
		}
		p.advance(r)
	}
	p.writeResult(ctx)
	return nil
}

// step runs the current step and moves past it.
func (p *pipelineRun) step(ctx workflow.Context) error {
	step, _ := p.graph.Step(p.state.Current)
	seq := p.state.Seq + 1
	start := workflow.Now(ctx)
	var r contract.PipelineStepResult
	var err error
	if step.Kind == pipeline.KindCoordination {
		r, err = p.coordinate(ctx, step, seq)
	} else {
		r, err = p.runStep(ctx, step, seq)
	}
	if err != nil {
		if temporal.IsCanceledError(err) || ctx.Err() != nil {
			p.entries = append(p.entries, contract.PipelineStepEntry{Seq: seq, Name: step.Name, Status: pipeline.Cancelled,
				DurationMs: workflow.Now(ctx).Sub(start).Milliseconds(), Evidence: []string{}})
			dctx, cancel := workflow.NewDisconnectedContext(ctx)
			defer cancel()
			p.status = string(pipeline.Cancelled)
			p.writeResult(dctx)
			return temporal.NewCanceledError(p.result())
		}
		r = contract.PipelineStepResult{Seq: seq, Step: step.Name, Status: pipeline.Error, Error: failureMessage(err)}
	}
	r.DurationMs = workflow.Now(ctx).Sub(start).Milliseconds()
	p.advance(r)
	p.writeResult(ctx)
	return nil
}

// advance records a step's result and feeds it to the state machine.
func (p *pipelineRun) advance(r contract.PipelineStepResult) {
	evidence := r.Evidence
	if evidence == nil {
		evidence = []string{}
	}
	p.entries = append(p.entries, contract.PipelineStepEntry{
		Seq: r.Seq, Name: r.Step, Status: r.Status, DurationMs: r.DurationMs, Usage: r.Usage,
		Evidence: evidence, Error: r.Error, Summary: contract.Preview(r.Summary), Folder: r.Folder,
		Session: r.Session, Reused: r.Reused,
	})
	p.usage = p.usage.Add(r.Usage)
	p.state, _, _ = pipeline.Next(p.graph, p.state, pipeline.Result{
		Status: r.Status, Summary: r.Summary, Request: r.Request, MessagesKey: r.MessagesKey,
	})
	last := r
	p.last = &last
	if r.Folder != "" {
		p.from = r.Folder
	}
}

func (p *pipelineRun) runStep(ctx workflow.Context, step pipeline.Step, seq int) (contract.PipelineStepResult, error) {
	in := contract.PipelineStepInput{
		RunID: p.runID, SessionRef: p.ref, Seq: seq, Step: step.Name, Title: p.in.Definition.Title, Graph: p.graph.For(step.Name),
		Backend: p.in.Definition.Backend, Input: p.in.Input, Context: p.contextFor(step), Previous: p.previous(),
		From: p.from, ResumeKey: p.state.ResumeKey, Resume: p.state.Resume,
	}
	var r contract.PipelineStepResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, p.stepOptions(step.Name, seq)),
		contract.NamePipelineStep, in).Get(ctx, &r)
	return r, err
}

// previous is what a step is told about the step before it: its id and
// pass/fail, never its summary, error or evidence (seed 004).
func (p *pipelineRun) previous() *pipeline.Previous {
	if p.last == nil {
		return nil
	}
	return &pipeline.Previous{Name: p.last.Step, Status: pipeline.PassFail(string(p.last.Status))}
}

// contextFor is the project context as step is given it: the run's
// project summary with credentials only for a step that logs in.
func (p *pipelineRun) contextFor(step pipeline.Step) string {
	if p.project != nil {
		return p.project.For(step)
	}
	return ""
}

func (p *pipelineRun) stepOptions(name string, seq int) workflow.ActivityOptions {
	o := agentStepOptions("", seq, p.in.StepHeartbeatSeconds)
	o.StartToCloseTimeout = 2 * time.Hour
	o.Summary = fmt.Sprintf("step %d · %s", seq, name)
	return o
}

func (p *pipelineRun) smallCtx(ctx workflow.Context, summary string) workflow.Context {
	return smallActivityCtx(ctx, summary)
}

// finish ends the run: completed returns the result; anything else fails
// the workflow with the result as details.
func (p *pipelineRun) finish(ctx workflow.Context) (contract.PipelineResult, error) {
	p.status = p.state.Outcome
	if p.status == "" {
		p.status = string(pipeline.Error)
	}
	p.writeResult(ctx)
	if p.status == PipelineCompleted {
		return p.result(), nil
	}
	return p.result(), p.failure()
}

// end stops a run that cannot go on before or between steps.
func (p *pipelineRun) end(ctx workflow.Context, status, reason string) error {
	p.status, p.state.Reason, p.state.Done = status, reason, true
	p.writeResult(ctx)
	return p.failure()
}

func (p *pipelineRun) failure() error {
	msg := fmt.Sprintf("pipeline run %s ended %s", p.runID, p.status)
	if n := len(p.entries); n > 0 && p.status == string(pipeline.Failed) {
		e := p.entries[n-1]
		msg = fmt.Sprintf("pipeline run %s failed at step %d · %s (%s)", p.runID, e.Seq, e.Name, e.Status)
		if e.Error != "" {
			msg += ": " + e.Error
		}
	}
	if p.state.Reason != "" {
		msg += ": " + p.state.Reason
	}
	return temporal.NewNonRetryableApplicationError(msg, contract.ErrTypePipelineFailed, nil, p.result())
}

// result is result.json: every step run so far in order, then the steps
// the run never reached as not_run.
func (p *pipelineRun) result() contract.PipelineResult {
	r := contract.PipelineResult{
		RunID: p.runID, Title: p.in.Definition.Title, Status: p.status, Reason: p.state.Reason,
		Usage: p.usage, ResumeFrom: p.in.ResumeFrom, Location: p.location,
		Steps: append([]contract.PipelineStepEntry{}, p.entries...),
	}
	if !p.state.Done {
		r.Current = p.state.Current
	}
	ran := map[string]bool{}
	for _, e := range p.entries {
		ran[e.Name] = true
	}
	for _, s := range p.graph.Steps {
		if !ran[s.Name] {
			r.Steps = append(r.Steps, contract.PipelineStepEntry{Name: s.Name, Status: pipeline.NotRun, Evidence: []string{}})
		}
	}
	return r
}

func (p *pipelineRun) writeResult(ctx workflow.Context) {
	if p.initFailed {
		return // the folder is not this run's to write
	}
	err := workflow.ExecuteActivity(p.smallCtx(ctx, "write result.json"), contract.NameWritePipelineResult,
		contract.WritePipelineResultInput{RunID: p.runID, SessionRef: p.ref, Result: p.result()}).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("result.json not written; the workflow result and the progress query still have it", "error", err)
	}
}

// failureMessage is the innermost message of an activity or child failure,
// which is what the user can act on.
func failureMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Error()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "timed out (" + timeout.TimeoutType().String() + "): " + err.Error()
	}
	return err.Error()
}

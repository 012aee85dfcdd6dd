package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/pipeline"
)

// coordinate runs a coordination step: a Coordination session as a child
// workflow, whose agents get the step's isolated context as their task.
// Its final answer is the step's result; its final workspace joins the
// run's shared files.
func (p *pipelineRun) coordinate(ctx workflow.Context, step pipeline.Step, seq int) (contract.PipelineStepResult, error) {
	folder := pipeline.StepFolder(seq, step.Name)
	sessionID := fmt.Sprintf("%s.%03d-%s", p.runID, seq, step.Name)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:    sessionID,
		StaticSummary: fmt.Sprintf("step %d · %s", seq, step.Name),
	})
	in := CoordinationInput{
		Task:                 pipeline.StepMessage(step, p.contextFor(step), p.previous(), p.in.Input),
		Config:               *step.Team,
		SessionID:            sessionID,
		StepHeartbeatSeconds: p.in.StepHeartbeatSeconds,
	}
	var cr CoordinationResult
	res := contract.PipelineStepResult{Seq: seq, Step: step.Name, Folder: folder, Session: sessionID}
	if err := workflow.ExecuteChildWorkflow(cctx, contract.CoordinationName, in).Get(ctx, &cr); err != nil {
		if ctx.Err() != nil {
			return res, err
		}
		res.Status, res.Error = pipeline.Error, "coordination session "+sessionID+": "+failureMessage(err)
		res.Folder = ""
		return res, nil
	}
	res.Status, res.Summary, res.Usage = pipeline.Completed, cr.FinalAnswer, cr.Usage
	err := workflow.ExecuteActivity(storageActivityCtx(ctx, fmt.Sprintf("store step %d · %s", seq, step.Name), 5*time.Minute),
		contract.NameAdoptSession, contract.AdoptSessionInput{
			RunID: p.runID, SessionRef: p.ref, Folder: folder, From: p.from, Session: sessionID, Result: res,
		}).Get(ctx, nil)
	return res, err
}

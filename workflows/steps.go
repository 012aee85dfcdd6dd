package workflows

import (
	"errors"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/runes"
)

// stepRun is one launched AgentStep activity.
type stepRun struct {
	coord.Launch
	cancel workflow.CancelFunc
	fut    workflow.Future
	// held is a result that arrived while the launch was being fenced: it
	// waits until the fence tells whether the launch committed.
	held *stepOutcome
}

type stepOutcome struct {
	res contract.AgentStepResult
	err error
}

// agentStepOptions are the options of one agent step. Summary shows in the
// Web UI next to the activity.
func agentStepOptions(agent string, step, heartbeatSeconds int) workflow.ActivityOptions {
	heartbeat := 60 * time.Second
	if heartbeatSeconds > 0 {
		heartbeat = time.Duration(heartbeatSeconds) * time.Second
	}
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			// 1+2+…+32 s, then a minute apart: an agent survives about four
			// minutes of storage outage or rate limiting.
			MaximumAttempts:        coord.MaxStepAttempts,
			NonRetryableErrorTypes: contract.NonRetryable(),
		},
		Summary: agent + " · step " + strconv.Itoa(step),
	}
}

// smallActivityCtx carries the options of the short storage activities
// (InitSession, WriteStatus, WriteInbox, FenceStep, SearchAttributesAvailable).
// They write one small object and do not heartbeat, so the start-to-close
// timeout is how long a worker that died mid-write holds its session up:
// 20 s, an order of magnitude above a slow write.
func smallActivityCtx(ctx workflow.Context, summary string) workflow.Context {
	return storageActivityCtx(ctx, summary, 20*time.Second)
}

// storageActivityCtx is smallActivityCtx with room for more: copying
// workspaces, or summarising a project context with one model call.
func storageActivityCtx(ctx workflow.Context, summary string, timeout time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: contract.NonRetryable(),
		},
		Summary: summary,
	})
}

// do carries out the machine's decisions.
func (w *coordination) do(ctx workflow.Context, ds []coord.Decision) {
	launched := false
	for _, d := range ds {
		switch d := d.(type) {
		case coord.Launch:
			w.launch(ctx, d)
			launched = true
		case coord.Fence:
			w.fence(ctx, d)
		case coord.Abandon:
			if r := w.steps[d.Launch]; r != nil {
				r.cancel()
				delete(w.steps, d.Launch)
				workflow.GetLogger(ctx).Info("a step is fenced off; its agent is relaunched with the next step number",
					"agent", r.Agent, "step", r.Step, "launch", r.Launch.Launch)
			}
		case coord.Evaluate:
			w.evaluate(ctx, d)
		case coord.CancelEvaluation:
			if w.evalCancel != nil {
				w.evalCancel()
				w.evalCancel = nil
			}
		case coord.Present:
			w.present(ctx, d)
		case coord.End:
			w.end = &d
		}
	}
	if launched {
		w.details(ctx)
	}
}

// launch starts one AgentStep. Cancelling the workflow does not cancel the
// step by itself: the step is fenced first, and one that committed is let
// finish.
func (w *coordination) launch(ctx workflow.Context, l coord.Launch) {
	r := &stepRun{Launch: l}
	stepCtx, cancel := workflow.NewDisconnectedContext(ctx)
	r.cancel = cancel
	stepCtx = workflow.WithActivityOptions(stepCtx, agentStepOptions(l.Agent, l.Step, w.in.StepHeartbeatSeconds))
	in := contract.AgentStepInput{
		SessionID:  w.state.SessionID,
		Agent:      l.Agent,
		Step:       l.Step,
		Launch:     l.Launch,
		SessionRef: w.ref(),
		InputsHash: w.state.InputsHash,
		Mode:       l.Mode,
		Tally:      l.Tally,
		Evaluation: l.Evaluation,
		AutoStop:   l.AutoStop,
		Visible:    l.Visible,
	}
	r.fut = workflow.ExecuteActivity(stepCtx, contract.NameAgentStep, in)
	w.steps[l.Launch] = r
	w.wait(r.fut, func(f workflow.Future) { w.stepDone(ctx, r, f) })
}

// stepDone takes a step's result. A step being fenced keeps it until the
// fence tells whether its launch committed.
func (w *coordination) stepDone(ctx workflow.Context, r *stepRun, f workflow.Future) {
	var res contract.AgentStepResult
	err := f.Get(ctx, &res)
	if w.steps[r.Launch.Launch] != r {
		return // abandoned: its result is not wanted
	}
	if run := w.m.Running(r.Launch.Launch); run != nil && run.Fencing {
		r.held = &stepOutcome{res, err}
		return
	}
	w.record(ctx, r, res, err)
}

// record turns a step's result into the machine's event. A failed step (a
// non-retryable error, or retries used up) drops its agent; the others go
// on. A step superseded by a launch it does not know of (a reset run), or
// whose turn ended without an action, gives up its number.
func (w *coordination) record(ctx workflow.Context, r *stepRun, res contract.AgentStepResult, err error) {
	delete(w.steps, r.Launch.Launch)
	launch := r.Launch.Launch
	var app *temporal.ApplicationError
	isApp := errors.As(err, &app)
	switch {
	case err == nil:
		w.stepsDone++
		w.event(ctx, coord.Acted{Launch: launch, Action: res.Action, Target: res.Target, Reason: res.Reason,
			Summary: res.Summary, Status: res.StopStatus, SeenSteps: res.SeenSteps, Usage: res.Usage, Checklist: res.Checklist})
	case isApp && app.Type() == contract.ErrTypeSuperseded:
		workflow.GetLogger(ctx).Warn("a step's folder is held by another launch; relaunching with the next step number",
			"agent", r.Agent, "step", r.Step, "launch", launch, "error", err)
		w.event(ctx, coord.GivenUp{Launch: launch, Reason: failureReason(err)})
	case isApp && (app.Type() == contract.ErrTypeTurnEnded || app.Type() == contract.ErrTypeAnswerRefused):
		workflow.GetLogger(ctx).Warn("a step's turn ended without an action; relaunching the agent",
			"agent", r.Agent, "step", r.Step, "error", err)
		w.event(ctx, coord.TurnEnded{Launch: launch, Overran: app.Type() == contract.ErrTypeTurnEnded, Reason: failureReason(err)})
	default:
		w.lastCause = err
		workflow.GetLogger(ctx).Warn("agent failed; coordination goes on without it", "agent", r.Agent, "step", r.Step, "error", err)
		w.event(ctx, coord.Failed{Launch: launch, Reason: failureReason(err)})
	}
}

// fence runs FenceStep for one launch; the machine acts on the answer.
func (w *coordination) fence(ctx workflow.Context, d coord.Fence) {
	fctx := smallActivityCtx(w.live(ctx), "fence "+d.Agent+" · step "+strconv.Itoa(d.Step))
	f := workflow.ExecuteActivity(fctx, contract.NameFenceStep, contract.FenceStepInput{SessionID: w.state.SessionID,
		SessionRef: w.ref(), Agent: d.Agent, Step: d.Step, Launch: d.Launch, Reason: d.Reason})
	w.wait(f, func(f workflow.Future) {
		var res contract.FenceStepResult
		err := f.Get(ctx, &res)
		if err != nil {
			workflow.GetLogger(ctx).Warn("could not fence a step", "agent", d.Agent, "step", d.Step, "launch", d.Launch, "error", err)
		}
		w.event(ctx, coord.FenceDone{Launch: d.Launch, Committed: err == nil && res.Committed, Err: err != nil})
		if r := w.steps[d.Launch]; r != nil && r.held != nil {
			if run := w.m.Running(d.Launch); run != nil && !run.Fencing {
				held := r.held
				r.held = nil
				w.record(ctx, r, held.res, held.err)
			}
		}
	})
}

// evaluate runs the RoundEvaluator activity over the current answers.
func (w *coordination) evaluate(ctx workflow.Context, d coord.Evaluate) {
	ectx, cancel := workflow.WithCancel(ctx)
	w.evalCancel = cancel
	opts := agentStepOptions(d.Evaluator, 0, w.in.StepHeartbeatSeconds)
	opts.Summary = "round evaluator · before round " + strconv.Itoa(d.Round)
	in := contract.RoundEvaluatorInput{
		SessionID: w.state.SessionID, SessionRef: w.ref(), InputsHash: w.state.InputsHash,
		Round: d.Round, Visible: d.Visible, Evaluator: d.Evaluator, Launch: d.Launch,
	}
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(ectx, opts), contract.NameRoundEvaluator, in)
	w.wait(f, func(f workflow.Future) {
		var res contract.RoundEvaluatorResult
		err := f.Get(ctx, &res)
		if ev := w.m.State.Eval.Running; ev == nil || ev.Launch != d.Launch {
			return // cancelled
		}
		w.evalCancel = nil
		if err != nil {
			// The agents go on without a handoff: their checklists still
			// gate them; the failure is in the log and the history.
			workflow.GetLogger(ctx).Warn("the round evaluator failed; the round goes on without its packet",
				"round", d.Round, "error", failureReason(err))
			w.event(ctx, coord.Evaluated{Usage: spentBy(err)})
			return
		}
		w.event(ctx, coord.Evaluated{OK: true, Usage: res.Usage})
	})
}

// maxFailReason bounds the reason kept for a dropped agent: it is shown in
// status lines and carried in the workflow's state.
const maxFailReason = 300

// failureReason is the cause of a failed step without the activity
// wrappers: the application error's message (what the step said went
// wrong) or the timeout, cut to maxFailReason bytes.
func failureReason(err error) string {
	msg := err.Error()
	var app *temporal.ApplicationError
	var timeout *temporal.TimeoutError
	switch {
	case errors.As(err, &app) && app.Message() != "":
		msg = app.Message()
	case errors.As(err, &timeout):
		msg = timeout.Error()
	}
	return runes.Clip(msg, maxFailReason)
}

// spentBy is the usage a failed activity reported with its error (see
// activities' withUsage); zero when it reported none.
func spentBy(err error) coord.Usage {
	var ae *temporal.ApplicationError
	var u coord.Usage
	if errors.As(err, &ae) && ae.HasDetails() && ae.Details(&u) == nil {
		return u
	}
	return coord.Usage{}
}

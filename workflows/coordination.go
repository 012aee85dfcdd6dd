package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
)

// Coordination runs one multi-agent session. The rules are coord.Machine's:
// this function only turns activity results, the timer, handlers and
// cancellation into its events, and carries out its decisions (launch,
// fence, evaluate, present, end). See ARCHITECTURE.md, "The coordination
// state machine", and seeds 000/001.
func Coordination(ctx workflow.Context, in CoordinationInput) (CoordinationResult, error) {
	if err := checkInput(in); err != nil {
		return CoordinationResult{}, err
	}
	w := &coordination{in: in}
	if in.State != nil {
		w.state = *in.State
	} else {
		w.state.SessionID = in.SessionID
		if w.state.SessionID == "" {
			w.state.SessionID = workflow.GetInfo(ctx).WorkflowExecution.ID
		}
	}
	if err := w.setup(ctx); err != nil {
		return CoordinationResult{}, err
	}
	return w.run(ctx)
}

// Registry is the part of a Temporal worker (or test environment) that
// Register needs.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// Register registers the workflows of this package under their names.
func Register(r Registry) {
	r.RegisterWorkflowWithOptions(Coordination, workflow.RegisterOptions{Name: contract.CoordinationName})
	r.RegisterWorkflowWithOptions(Pipeline, workflow.RegisterOptions{Name: contract.PipelineName})
}

// coordination drives one run. Workflow code is single-threaded
// (coroutines switch only at blocking calls), so handlers and the main loop
// share it without locks.
type coordination struct {
	in CoordinationInput
	// state is carried across continue-as-new as is: the next run's input
	// holds this value.
	state CarriedState
	m     *coord.Machine

	// This run only.
	steps      map[int]*stepRun // running launches by number
	evalCancel workflow.CancelFunc
	pending    []pending // futures the loop waits on, in the order added
	timedOut   bool
	cancelled  bool
	stepsDone  int  // completed steps in this run
	changed    bool // something changed since the last publish
	end        *coord.End
	lastCause  error // the latest agent failure of this run
	presented  contract.PresentResult
	initFailed bool
	statusW    *statusWriter
	// Search attribute values last upserted.
	saPhase, saWinner string
}

// pending is a future the main loop waits on, and what to do when it is ready.
type pending struct {
	f  workflow.Future
	do func(workflow.Future)
}

// setup registers the status query and the human_input update before the
// first blocking call, so both work from the start.
func (w *coordination) setup(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, contract.QueryStatus, func() (coord.Status, error) {
		return w.snapshot(), nil
	}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateHumanInput, w.humanInput,
		workflow.UpdateHandlerOptions{Validator: w.validateHumanInput})
}

func (w *coordination) run(ctx workflow.Context) (CoordinationResult, error) {
	w.startStatusWriter(ctx)
	if err := w.begin(ctx); err != nil {
		return CoordinationResult{}, err
	}
	w.steps = map[int]*stepRun{}
	timerCtx, stopTimer := workflow.WithCancel(ctx)
	defer stopTimer()
	var timer workflow.Future
	if left := w.state.Deadline.Sub(workflow.Now(ctx)); left > 0 {
		timer = workflow.NewTimerWithOptions(timerCtx, left, workflow.TimerOptions{Summary: "orchestrator timeout"})
	} else {
		w.timedOut = true
	}
	w.publish(ctx)
	w.do(ctx, w.m.Step(coord.Tick{}))
	for w.end == nil {
		if w.m.State.Draining && w.m.Idle() && w.m.State.Phase == coord.PhaseCoordinating && w.m.State.Stopping == "" {
			stopTimer()
			return CoordinationResult{}, w.continueAsNew(ctx)
		}
		if w.changed { // after launching: a status write never delays a relaunch
			w.changed = false
			w.publish(ctx)
		}
		sel := workflow.NewSelector(ctx)
		if timer != nil {
			sel.AddFuture(timer, func(f workflow.Future) {
				timer = nil
				if f.Get(ctx, nil) == nil {
					w.timedOut = true
					w.event(ctx, coord.Timeout{})
				}
			})
		}
		if !w.cancelled {
			sel.AddReceive(ctx.Done(), func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, nil)
				w.cancelled = true
				w.event(ctx, coord.Cancel{})
			})
		}
		for _, p := range slices.Clone(w.pending) {
			sel.AddFuture(p.f, func(f workflow.Future) {
				w.pending = slices.DeleteFunc(w.pending, func(q pending) bool { return q.f == f })
				p.do(f)
			})
		}
		sel.Select(w.live(ctx))
	}
	return w.finish(ctx)
}

// live is ctx, or once the workflow is cancelled a disconnected context:
// fences, committed steps and the final status still run then.
func (w *coordination) live(ctx workflow.Context) workflow.Context {
	if ctx.Err() == nil {
		return ctx
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	return dctx
}

// event feeds the machine one event and carries out its decisions. Once
// continue-as-new is due the machine drains first: what the event frees
// is not relaunched in this run.
func (w *coordination) event(ctx workflow.Context, e coord.Event) {
	w.changed = true
	if !w.m.State.Draining && !w.cancelled && !w.timedOut && w.continueDue(ctx) {
		w.do(ctx, w.m.Step(coord.Drain{}))
	}
	w.do(ctx, w.m.Step(e))
}

// wait adds a future to the main loop.
func (w *coordination) wait(f workflow.Future, do func(workflow.Future)) {
	w.pending = append(w.pending, pending{f: f, do: do})
}

// begin creates the session (first run only) and learns whether the
// search attributes exist. The session is created for this workflow's run
// chain (its id and first run id, which retries, continue-as-new and
// resets keep) and stores the task, config and criteria once; steps then
// carry their hash. InitSession applies the config's defaults and
// validates it; its result, in history, is what the session runs by.
func (w *coordination) begin(ctx workflow.Context) error {
	if w.in.State != nil {
		w.m = &coord.Machine{Rules: w.state.Rules, State: w.state.Machine}
		workflow.GetLogger(ctx).Info("coordination continues", "run", w.state.Runs, "session", w.state.Session)
		return nil
	}
	now := workflow.Now(ctx).UTC()
	info := workflow.GetInfo(ctx)
	initIn := contract.InitSessionInput{
		SessionID:    w.state.SessionID,
		Task:         w.in.Task,
		Config:       w.in.Config,
		EvalCriteria: w.in.EvalCriteria,
		CreatedAt:    now.Format(time.RFC3339),
		Owner:        contract.Owner{WorkflowID: info.WorkflowExecution.ID, FirstRunID: info.FirstRunID},
	}
	initF := workflow.ExecuteActivity(smallActivityCtx(ctx, "init session"), contract.NameInitSession, initIn)
	attrsF := workflow.ExecuteActivity(smallActivityCtx(ctx, "search attributes"), contract.NameSearchAttrsSet)
	var init contract.InitSessionResult
	err := initF.Get(ctx, &init)
	if ctx.Err() != nil {
		w.initFailed = true
		return ctx.Err() // cancelled before the session existed
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && (appErr.Type() == contract.ErrTypeSessionOwned || appErr.Type() == contract.ErrTypeInvalidInput) {
		w.initFailed = true
		return temporal.NewNonRetryableApplicationError(appErr.Message(), appErr.Type(), nil)
	}
	if err != nil {
		w.initFailed = true
		return fmt.Errorf("could not create the session in storage (check the worker's storage settings): %w", err)
	}
	w.state.Session, w.state.InputsHash = init.Location, init.InputsHash
	w.state.Owner = &initIn.Owner
	w.state.Rules = init.Plan.Rules
	w.state.StartedAt, w.state.Deadline = now, now.Add(init.Plan.Timeout)
	w.m = coord.NewMachine(init.Plan.Rules, init.Plan.Agents)
	var ok bool
	if err := attrsF.Get(ctx, &ok); err != nil {
		// Without them an upsert would fail the workflow task, so any
		// doubt means no.
		workflow.GetLogger(ctx).Warn("cannot tell whether the search attributes exist; not using them", "error", err)
	}
	w.state.SearchAttributes = ok
	return nil
}

// ref is what every activity that writes the session checks it against.
func (w *coordination) ref() contract.SessionRef {
	return contract.SessionRef{Owner: w.state.Owner, Location: w.state.Session}
}

// continueDue reports whether this run should continue as new: the server
// suggests it, or MaxStepsBeforeContinue steps completed. A run always makes
// progress first, so a suggestion cannot loop.
func (w *coordination) continueDue(ctx workflow.Context) bool {
	if w.stepsDone == 0 {
		return false
	}
	if n := w.in.MaxStepsBeforeContinue; n > 0 && w.stepsDone >= n {
		return true
	}
	return workflow.GetInfo(ctx).GetContinueAsNewSuggested()
}

// continueAsNew hands the state to a new run once no step runs and every
// update handler has finished.
func (w *coordination) continueAsNew(ctx workflow.Context) error {
	w.flushStatus(ctx)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	w.state.Runs++
	w.state.Machine = w.m.State
	w.state.Machine.Draining = false
	next := w.in
	next.State = &w.state
	workflow.GetLogger(ctx).Info("continuing as new", "steps", w.stepsDone, "launches", w.m.State.Launches)
	return workflow.NewContinueAsNewError(ctx, contract.CoordinationName, next)
}

package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// Coordination runs one multi-agent session: agents step in parallel (one
// AgentStep activity per step) until their votes agree, or their stops
// complete a decomposition, then the winner or presenter runs Present. See
// ARCHITECTURE.md, "Workflows", and seeds 000/001.
func Coordination(ctx workflow.Context, in CoordinationInput) (CoordinationResult, error) {
	// A continued run goes on as its session was created (CarriedState).
	owned := in.State == nil && workflow.GetVersion(ctx, ownedSessionChange, workflow.DefaultVersion, 1) == 1
	if err := normalize(&in, workflow.GetInfo(ctx).WorkflowExecution.ID, owned); err != nil {
		return CoordinationResult{}, err
	}
	w := newCoordination(in)
	w.owned = owned
	if err := w.setup(ctx); err != nil {
		return CoordinationResult{}, err
	}
	return w.run(ctx)
}

// ownedSessionChange is the workflow.GetVersion change id of owned
// sessions: the session is created exclusively for its workflow, activities
// check owner and storage location, steps get their inputs by reference,
// human input waits for the session, and the start is refused above the
// contract's limits. Runs recorded before replay without any of it.
const ownedSessionChange = "owned-session-inputs-by-reference"

// limitsChange is the workflow.GetVersion change id of seed 001's
// pre-start gates: a decomposition agent at an answer limit is launched to
// stop automatically, and an agent at the fairness lead cap is paused
// while a slower peer can catch up instead of being launched vote-only
// (planLaunches). Runs recorded before replay without them.
const limitsChange = "limits-autostop-fairness-pause"

// visibleAnswersChange is the workflow.GetVersion change id of steps whose
// visible answers the workflow decides at launch (AgentStepInput.Visible,
// visibleAnswers). Runs recorded before let the activity show what storage
// held when it started.
const visibleAnswersChange = "launch-visible-answers"

// fencedStepsChange is the workflow.GetVersion change id of fenced steps:
// every step commits to its folder through launch.json, the workflow fences
// a step off (FenceStep) before it abandons it — update_mode restart, the
// orchestrator timeout, cancellation — and relaunches the agent with the
// next step number, and a step that committed is let finish. Runs recorded
// before cancelled at once and relaunched with the same number.
const fencedStepsChange = "fenced-step-writes"

// turnEndedChange is the workflow.GetVersion change id of steps whose turn
// ends without failing the agent: seed 001's round timeout termination
// (contract.ErrTypeTurnEnded), and an answer refused by a limit that peers
// reached while the step could not vote (contract.ErrTypeAnswerRefused).
// The fenced step gives up its number and the agent, keeping its answer
// and vote, is relaunched with the next one — after maxEndedTurns round
// timeouts in a row it is dropped. Runs recorded before failed the agent
// at the first one.
const turnEndedChange = "turn-ended-relaunch"

// decompositionViewChange is the workflow.GetVersion change id of
// decomposition steps shown every agent's latest answer even before the
// agent's own first answer (visibleAnswers): shown nothing, an agent that
// stops without answering never covered the others' work, so its stop was
// always stale and it was relaunched until max_steps_per_agent. Runs
// recorded before showed it nothing.
const decompositionViewChange = "decomposition-first-step-sees-peers"

// failedPresenterChange is the workflow.GetVersion change id of replacing
// a configured presenter that failed (decomposition, no vote round) by the
// first alive agent, as docs/config.md says. Runs recorded before let the
// dropped agent present.
const failedPresenterChange = "failed-presenter-replaced"

// givenUpStepsChange is the workflow.GetVersion change id of counting the
// steps the workflow gives up without an action (coord.Agent.GivenUpStep:
// fenced by a restart, superseded, ended by the round timeout) toward
// max_steps_per_agent, as docs/config.md says. Runs recorded before
// counted only steps that acted, so such steps ran past the cap.
const givenUpStepsChange = "max-steps-counts-given-up-steps"

// maxEndedTurns is how many steps in a row of an agent the round timeout
// may end before it is failed for good: an agent that never finishes in
// time would otherwise be relaunched until the orchestrator timeout. It is
// step mode's session.MaxStepFailures, so both modes drop it alike.
const maxEndedTurns = 3

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

// coordination is the state of one run. Workflow code is single-threaded
// (coroutines switch only at blocking calls), so handlers and the main loop
// share it without locks.
type coordination struct {
	in   CoordinationInput
	orch config.Orchestrator

	// state is carried across continue-as-new as is: the next run's
	// input holds this value.
	state CarriedState

	// This run only.
	phase   string
	verdict coord.Verdict // how coordination ended, once decided
	running []*stepRun    // launch order
	// evaluating is the managed round evaluator while it runs.
	evaluating *evalRun
	stepsDone  int  // completed steps in this run
	changed    bool // a step completed since the last publish
	timedOut   bool
	cancelled  bool
	lastCause  error // the latest agent failure of this run
	// presentFallback is why the presentation fell back to the stored answer.
	presentFallback string
	// owned: this first run creates its session for itself and passes
	// inputs by reference (ownedSessionChange); initFailed: it could not.
	owned, initFailed bool
	// paced: this run applies the pre-start gates of limitsChange.
	paced bool
	// fixedView: the workflow decides each step's visible answers
	// (visibleAnswersChange); fenced: steps are fenced (fencedStepsChange).
	fixedView, fenced bool
	// capGivenUp: steps given up without an action count toward
	// max_steps_per_agent (givenUpStepsChange).
	capGivenUp bool
	// replaceFailedPresenter: a configured presenter that failed is
	// replaced by the first alive agent (failedPresenterChange).
	replaceFailedPresenter bool
	statusW                *statusWriter // nil on runs recorded before it existed
	// Search attribute values last upserted.
	saPhase, saWinner string
}

// ending is how the coordination loop ended.
type ending int

const (
	endDecided ending = iota // see w.verdict
	endTimeout
	endCancelled
	endContinue
)

func newCoordination(in CoordinationInput) *coordination {
	w := &coordination{in: in, orch: in.Config.Orchestrator, phase: coord.PhaseCoordinating}
	if in.State != nil {
		w.state = *in.State
		for i := range w.state.Ledger.Agents {
			w.state.Ledger.Agents[i].Running = false // nothing runs across continue-as-new
		}
		return w
	}
	for _, id := range in.Config.AgentIDs() {
		w.state.Ledger.Agents = append(w.state.Ledger.Agents, coord.Agent{ID: id})
	}
	return w
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
	if workflow.GetVersion(ctx, asyncStatusChange, workflow.DefaultVersion, 1) == 1 {
		w.startStatusWriter(ctx)
	}
	w.decideNoVote(ctx)
	w.paced = workflow.GetVersion(ctx, limitsChange, workflow.DefaultVersion, 1) == 1
	w.fixedView = workflow.GetVersion(ctx, visibleAnswersChange, workflow.DefaultVersion, 1) == 1
	w.fenced = workflow.GetVersion(ctx, fencedStepsChange, workflow.DefaultVersion, 1) == 1
	w.capGivenUp = workflow.GetVersion(ctx, givenUpStepsChange, workflow.DefaultVersion, 1) == 1
	w.replaceFailedPresenter = workflow.GetVersion(ctx, failedPresenterChange, workflow.DefaultVersion, 1) == 1
	if err := w.begin(ctx); err != nil {
		return CoordinationResult{}, err
	}
	w.setPhase(ctx, coord.PhaseCoordinating)

	sel := workflow.NewSelector(ctx)
	timerCtx, stopTimer := workflow.WithCancel(ctx)
	defer stopTimer()
	if left := w.state.Deadline.Sub(workflow.Now(ctx)); left > 0 {
		timer := workflow.NewTimerWithOptions(timerCtx, left, workflow.TimerOptions{Summary: "orchestrator timeout"})
		sel.AddFuture(timer, func(f workflow.Future) {
			if f.Get(ctx, nil) == nil {
				w.timedOut = true
			}
		})
	} else {
		w.timedOut = true
	}
	sel.AddReceive(ctx.Done(), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		w.cancelled = true
	})

	switch w.coordinate(ctx, sel) {
	case endCancelled:
		return CoordinationResult{}, w.finishCancelled(ctx)
	case endContinue:
		stopTimer()
		return CoordinationResult{}, w.continueAsNew(ctx)
	case endTimeout:
		return w.finishTimeout(ctx)
	}
	if w.verdict.Status == coord.StatusFailed {
		return CoordinationResult{}, w.fail(ctx, w.failure())
	}
	return w.present(ctx)
}

// begin creates the session (first run only) and learns whether the
// search attributes exist. An owned session is created for this workflow's
// run chain (its id and first run id, which retries, continue-as-new and
// resets keep) and stores the task, config and criteria once; steps then
// carry their hash.
func (w *coordination) begin(ctx workflow.Context) error {
	if w.in.State != nil {
		workflow.GetLogger(ctx).Info("coordination continues", "run", w.state.Runs, "session", w.state.Session)
		return nil
	}
	now := workflow.Now(ctx).UTC()
	w.state.StartedAt, w.state.Deadline = now, now.Add(w.orch.Timeout())
	initIn := contract.InitSessionInput{
		SessionID:    w.in.SessionID,
		Task:         w.in.Task,
		Agents:       sortedIDs(w.in.Config.AgentIDs()),
		Mode:         string(w.orch.CoordinationMode),
		EvalCriteria: w.in.EvalCriteria,
		CreatedAt:    now.Format(time.RFC3339),
	}
	if w.owned {
		info := workflow.GetInfo(ctx)
		initIn.Owner = &contract.Owner{WorkflowID: info.WorkflowExecution.ID, FirstRunID: info.FirstRunID}
		initIn.Config = &w.in.Config
	}
	var init contract.InitSessionResult
	initF := workflow.ExecuteActivity(w.smallCtx(ctx, "init session"), contract.NameInitSession, initIn)
	var attrsF workflow.Future
	if w.statusW != nil { // the question does not wait for the session
		attrsF = w.askSearchAttributes(ctx)
	}
	err := initF.Get(ctx, &init)
	if ctx.Err() != nil {
		w.initFailed = true
		return ctx.Err() // cancelled before the session existed
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == contract.ErrTypeSessionOwned {
		w.initFailed = true
		return temporal.NewNonRetryableApplicationError(appErr.Message(), contract.ErrTypeSessionOwned, nil)
	}
	if err != nil {
		w.initFailed = true
		return fmt.Errorf("could not create the session in storage (check the worker's storage settings): %w", err)
	}
	w.state.Session = init.Location
	if initIn.Owner != nil && init.InputsHash != "" { // else a worker from before owners created it
		w.state.Owner, w.state.InputsHash = initIn.Owner, init.InputsHash
	}
	if attrsF == nil {
		attrsF = w.askSearchAttributes(ctx)
	}
	w.state.SearchAttributes = w.searchAttributesAvailable(ctx, attrsF)
	return nil
}

// ref is what every activity that writes the session checks it against.
func (w *coordination) ref() contract.SessionRef {
	return contract.SessionRef{Owner: w.state.Owner, Location: w.state.Session}
}

// coordinate is the main loop: after every event (a finished step, the
// timeout, cancellation) it judges the ledger, launches what the schedule
// allows, writes the status and waits for the next event.
func (w *coordination) coordinate(ctx workflow.Context, sel workflow.Selector) ending {
	for {
		switch {
		case w.cancelled || ctx.Err() != nil:
			return endCancelled
		case w.timedOut:
			return endTimeout
		}
		if len(w.state.Revote) == 0 {
			v := coord.Judge(w.state.Ledger, w.verdictOptions(), w.state.RevoteRound)
			if v.Revote {
				w.startRevote(ctx, v.Reason)
			} else if v.Done {
				w.verdict = v
				return endDecided
			}
		}
		if w.continueDue(ctx) {
			if len(w.running) == 0 && w.evaluating == nil {
				return endContinue
			}
		} else {
			w.launchReady(ctx, sel)
			if len(w.running) == 0 && w.evaluating == nil {
				w.verdict = coord.Stalled(w.state.Ledger, w.verdictOptions(), w.state.AnswerOrder)
				return endDecided
			}
		}
		if w.changed { // after launching: a status write never delays a relaunch
			w.changed = false
			w.publish(ctx)
		}
		sel.Select(ctx)
	}
}

// startRevote asks every alive agent for another vote, showing the tally.
func (w *coordination) startRevote(ctx workflow.Context, reason string) {
	w.state.RevoteRound++
	w.state.RevoteTally = coord.AnonymousTally(w.state.Ledger)
	w.state.Revote = nil
	for _, a := range w.state.Ledger.Agents {
		if !a.Failed {
			w.state.Revote = append(w.state.Revote, a.ID)
		}
	}
	workflow.GetLogger(ctx).Info("split vote: re-vote", "round", w.state.RevoteRound, "reason", reason)
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
	next := w.in
	next.State = &w.state
	workflow.GetLogger(ctx).Info("continuing as new", "steps", w.stepsDone, "launches", w.state.Launches)
	return workflow.NewContinueAsNewError(ctx, contract.CoordinationName, next)
}

package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// stepRun is one launched AgentStep activity.
type stepRun struct {
	agent  string
	step   int
	launch int
	mode   coord.Mode
	// answers is how many answers existed at launch (update_mode restart
	// cancels only steps launched before a new answer).
	answers int
	cancel  workflow.CancelFunc
	// abandoned steps were cancelled (restart, timeout): their result is
	// ignored and the agent is not failed.
	abandoned bool
	// fut is the step's activity (fenced steps).
	fut workflow.Future
	// fencing: a FenceStep for this launch is under way (update_mode
	// restart); a result that arrives meanwhile waits in res/err (done)
	// until the fence tells whether the launch committed.
	fencing, done bool
	res           contract.AgentStepResult
	err           error
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
			MaximumAttempts:        10,
			NonRetryableErrorTypes: contract.NonRetryable(),
		},
		Summary: agent + " · step " + strconv.Itoa(step),
	}
}

// smallCtx carries the options of the short storage activities (InitSession,
// WriteStatus, WriteInbox, SearchAttributesAvailable).
func (w *coordination) smallCtx(ctx workflow.Context, summary string) workflow.Context {
	return smallActivityCtx(ctx, summary)
}

// smallActivityCtx is smallCtx for every workflow of this package. These
// activities write one small object and do not heartbeat, so the
// start-to-close timeout is how long a worker that died mid-write holds
// its session up: 20 s, an order of magnitude above a slow write.
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

// launchReady starts every step the schedule allows now.
func (w *coordination) launchReady(ctx workflow.Context, sel workflow.Selector) {
	plans := w.plan()
	plans = w.holdForEvaluation(ctx, sel, plans)
	if len(plans) > 0 || !coord.AnyRunning(w.state.Ledger) {
		// A re-vote launches all its agents at once (none runs at a split);
		// those that cannot step (failed, out of steps) keep their vote.
		w.state.Revote = nil
	}
	for _, p := range plans {
		w.launch(ctx, sel, p)
	}
	if len(plans) > 0 {
		w.details(ctx)
	}
}

// launch starts one AgentStep. The step number is the agent's next one, so
// a retried activity rewrites the same keys. Launch tells a relaunch apart:
// with fenced steps (fencedStepsChange) a relaunch after an abandoned launch
// takes the next number, since the abandoned one's folder is fenced off;
// before, it rewrote the same keys.
func (w *coordination) launch(ctx workflow.Context, sel workflow.Selector, p launchPlan) {
	a := w.state.Ledger.Find(p.Agent)
	a.Running = true
	w.state.Launches++
	r := &stepRun{agent: p.Agent, step: a.LatestStep + 1, launch: w.state.Launches, mode: p.Mode,
		answers: coord.TotalAnswers(w.state.Ledger)}
	var stepCtx workflow.Context
	if w.fenced {
		r.step = max(a.LatestStep, w.state.TakenSteps[p.Agent]) + 1
		// Cancelling the workflow does not cancel the step by itself: the
		// step is fenced first, and one that committed is let finish
		// (stopAll).
		stepCtx, r.cancel = workflow.NewDisconnectedContext(ctx)
	} else {
		stepCtx, r.cancel = workflow.WithCancel(ctx)
	}
	stepCtx = workflow.WithActivityOptions(stepCtx, agentStepOptions(r.agent, r.step, w.in.StepHeartbeatSeconds))
	in := contract.AgentStepInput{
		SessionID:  w.in.SessionID,
		Agent:      r.agent,
		Step:       r.step,
		Launch:     r.launch,
		SessionRef: w.ref(),
		InputsHash: w.state.InputsHash,
		Mode:       r.mode,
		Tally:      p.Tally,
		Evaluation: w.evaluation(),
		AutoStop:   p.AutoStop,
		Fenced:     w.fenced,
	}
	if w.fixedView {
		// In decomposition the agents own different parts and work taking
		// each other's into account; an agent shown nothing could never
		// stop with the others' work covered (its stop would always be
		// stale). Runs recorded before showed it nothing.
		protectFirst := !(r.mode == coord.ModeDecomposition && a.AnswerCount == 0 &&
			workflow.GetVersion(ctx, decompositionViewChange, workflow.DefaultVersion, 1) == 1)
		in.Visible = visibleAnswers(w.state.Ledger, r.agent, r.mode, protectFirst)
	}
	if in.InputsHash == "" { // a session created before inputs by reference
		in.Task, in.Config, in.EvalCriteria = w.in.Task, w.in.Config, w.in.EvalCriteria
	}
	f := workflow.ExecuteActivity(stepCtx, contract.NameAgentStep, in)
	r.fut = f
	w.running = append(w.running, r)
	sel.AddFuture(f, func(f workflow.Future) { w.finish(ctx, sel, r, f) })
}

// visibleAnswers is what a step launched now is shown (agent → step of its
// latest answer), decided here so that when the activity happens to start,
// or how often it is retried, changes nothing. With protectFirst, an agent
// that may still give its first answer is shown nothing (first-answer
// protection: first answers are independent); an agent that already
// answered, or may only vote, is shown every agent's latest answer, failed
// agents' included.
func visibleAnswers(l coord.Ledger, self string, mode coord.Mode, protectFirst bool) map[string]int {
	v := map[string]int{}
	if a := l.Find(self); protectFirst && a != nil && a.AnswerCount == 0 && mode != coord.ModeVoteOnly {
		return v
	}
	for _, a := range l.Agents {
		if a.LatestAnswerStep > 0 {
			v[a.ID] = a.LatestAnswerStep
		}
	}
	return v
}

// finish takes a step's result. A step being fenced keeps it until the
// fence tells whether its launch committed (fenceDone).
func (w *coordination) finish(ctx workflow.Context, sel workflow.Selector, r *stepRun, f workflow.Future) {
	var res contract.AgentStepResult
	err := f.Get(ctx, &res)
	switch {
	case r.abandoned:
		return // cancelled on purpose; the agent's state was handled then
	case r.fencing:
		r.done, r.res, r.err = true, res, err
		return
	}
	if w.record(ctx, r, res, err) && ctx.Err() == nil {
		w.restartPeers(ctx, sel, r.agent)
	}
}

// record records a step's result and reports whether it is a new answer.
// A failed step (a non-retryable error, or retries used up) fails its agent
// for good; the others go on. A fenced step superseded by a launch it does
// not know of (a reset run) gives up its step number: the agent is
// relaunched with the next one.
func (w *coordination) record(ctx workflow.Context, r *stepRun, res contract.AgentStepResult, err error) bool {
	w.running = slices.DeleteFunc(w.running, func(x *stepRun) bool { return x == r })
	a := w.state.Ledger.Find(r.agent)
	a.Running = false
	if ctx.Err() != nil && !w.fenced {
		return false // the workflow is cancelled: the step did not fail
	}
	w.changed = true
	var app *temporal.ApplicationError
	if err != nil && w.fenced && errors.As(err, &app) && app.Type() == contract.ErrTypeSuperseded {
		w.takeStep(r.agent, r.step)
		workflow.GetLogger(ctx).Warn("a step's folder is held by another launch; relaunching with the next step number",
			"agent", r.agent, "step", r.step, "launch", r.launch, "error", err)
		return false
	}
	if err != nil && w.fenced && errors.As(err, &app) && (app.Type() == contract.ErrTypeTurnEnded || app.Type() == contract.ErrTypeAnswerRefused) &&
		workflow.GetVersion(ctx, turnEndedChange, workflow.DefaultVersion, 1) == 1 {
		n := w.state.EndedTurns[r.agent]
		if app.Type() == contract.ErrTypeTurnEnded {
			// Only the agent's own overruns count; an answer refused by
			// peers' limits says nothing of it.
			if w.state.EndedTurns == nil {
				w.state.EndedTurns = map[string]int{}
			}
			n++
			w.state.EndedTurns[r.agent] = n
		}
		// The activity fenced the folder: its number is given up.
		w.takeStep(r.agent, r.step)
		if n < maxEndedTurns {
			// The agent keeps what it had and is relaunched with the next
			// number.
			workflow.GetLogger(ctx).Warn("a step's turn ended without an action; relaunching the agent",
				"agent", r.agent, "step", r.step, "overruns_in_a_row", n, "error", err)
			return false
		}
		err = temporal.NewNonRetryableApplicationError(fmt.Sprintf("%d steps in a row ended by the round timeout (last: %s)",
			maxEndedTurns, app.Message()), contract.ErrTypeTurnEnded, nil)
	}
	if err != nil {
		a.Failed = true
		a.FailReason = fmt.Sprintf("step %d: %s", r.step, failureReason(err))
		w.state.LastError = fmt.Sprintf("%s step %d: %s", r.agent, r.step, failureReason(err))
		w.lastCause = err
		workflow.GetLogger(ctx).Warn("agent failed; coordination goes on without it",
			"agent", r.agent, "step", r.step, "error", err)
		return false
	}
	w.stepsDone++
	delete(w.state.EndedTurns, r.agent)
	w.apply(a, r.step, res)
	return res.Action == coord.ActionNewAnswer
}

// apply records a step's action in the ledger (the step number is the one
// the workflow assigned, whatever the result says).
func (w *coordination) apply(a *coord.Agent, step int, res contract.AgentStepResult) {
	a.LatestStep, a.LastAction = step, res.Action
	a.Vote, a.Stop = nil, nil
	if res.Checklist != nil { // the latest checklist stays until a step makes another
		a.Checklist = res.Checklist
	}
	switch res.Action {
	case coord.ActionNewAnswer:
		coord.RecordAnswer(w.state.Ledger, a, step, res.SeenSteps)
		w.state.AnswerOrder = append(slices.DeleteFunc(w.state.AnswerOrder, func(id string) bool { return id == a.ID }), a.ID)
	case coord.ActionVote:
		a.Vote = &coord.Vote{Voter: a.ID, Target: res.Target, Reason: res.Reason, SeenSteps: res.SeenSteps, Step: step}
	case coord.ActionStop:
		a.Stop = &coord.Stop{Summary: res.Summary, Status: res.StopStatus, SeenSteps: res.SeenSteps, Step: step}
	}
	w.state.Usage = addUsage(w.state.Usage, res.Usage)
}

// restartPeers implements update_mode restart: a new answer cancels the
// running steps launched before it, of agents that already have an answer of
// their own (first-answer protection), and the schedule relaunches them with
// a new Launch. Their recorded state (an answer, or a vote the new answer
// made stale) puts them in coord.Relaunch. With fenced steps each is fenced
// first (fenceAsync) and relaunched with the next step number; before, it
// was cancelled at once and relaunched with the same one.
func (w *coordination) restartPeers(ctx workflow.Context, sel workflow.Selector, answerer string) {
	if w.orch.UpdateMode != config.UpdateRestart || w.orch.DisableInjection {
		return
	}
	total := coord.TotalAnswers(w.state.Ledger)
	// abandon removes from w.running: walk a copy. (Walking w.running
	// itself panicked unless the restarted step was the last one, so no
	// recorded history depends on the old walk.)
	for _, r := range slices.Clone(w.running) {
		a := w.state.Ledger.Find(r.agent)
		if r.abandoned || r.fencing || r.agent == answerer || r.answers >= total || a.AnswerCount == 0 {
			continue
		}
		if w.fenced {
			w.fenceAsync(ctx, sel, r, "restart")
		} else {
			w.abandon(r)
		}
		workflow.GetLogger(ctx).Info("restarting a step for a new answer",
			"agent", r.agent, "step", r.step, "launch", r.launch, "answer_by", answerer)
	}
}

// abandon cancels a running step whose result will be ignored.
func (w *coordination) abandon(r *stepRun) {
	r.abandoned = true
	r.cancel()
	w.state.Ledger.Find(r.agent).Running = false
	w.running = slices.DeleteFunc(w.running, func(x *stepRun) bool { return x == r })
}

func addUsage(a, b coord.Usage) coord.Usage { return a.Add(b) }

func sortedIDs(ids []string) []string {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
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
	if len(msg) > maxFailReason {
		cut := maxFailReason
		for cut > 0 && msg[cut]&0xC0 == 0x80 {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

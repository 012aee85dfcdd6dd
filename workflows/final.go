package workflows

import (
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// present runs the final presentation after consensus, plurality or a stall,
// with presentStrategy: voting mode uses final_answer_strategy;
// decomposition mode always synthesizes, and so does a session without a
// vote round unless its strategy is winner_reuse. When a model-backed presentation fails in voting mode, the
// winner's stored answer is used as is (winner_reuse), so the agreed answer
// is never lost to a failing presenter.
func (w *coordination) present(ctx workflow.Context) (CoordinationResult, error) {
	strategy := string(w.presentStrategy())
	decomposition := w.orch.CoordinationMode == config.ModeDecomposition
	if w.fenced {
		w.stopAll(ctx, "decided") // a verdict waits for running steps: normally none
	}
	w.setPhase(ctx, coord.PhasePresenting)
	pr, err := w.runPresent(ctx, w.verdict.Winner, strategy)
	if err != nil && ctx.Err() == nil && !decomposition && strategy != string(config.FinalWinnerReuse) {
		workflow.GetLogger(ctx).Warn("presentation failed; using the winner's stored answer",
			"winner", w.verdict.Winner, "strategy", strategy, "error", err)
		w.presentFallback = strategy + " presentation by " + w.verdict.Winner + " failed: " + failureReason(err)
		w.state.Usage = w.state.Usage.Add(spentBy(err))
		pr, err = w.runPresent(ctx, w.verdict.Winner, string(config.FinalWinnerReuse))
	}
	if ctx.Err() != nil {
		return CoordinationResult{}, w.finishCancelled(ctx)
	}
	if err != nil {
		return CoordinationResult{}, w.fail(ctx, temporal.NewNonRetryableApplicationError(
			"the final presentation by "+w.verdict.Winner+" failed; every answer stays stored in the session "+w.state.Session,
			contract.ErrTypePresentFailed, err))
	}
	w.setPhase(ctx, coord.PhaseDone)
	return w.result(pr), w.awaitHandlers(ctx)
}

// finishTimeout ends a session whose orchestrator timeout fired: running
// steps are cancelled (with fenced steps: fenced off, or let finish and
// recorded when they had committed), the timeout winner's stored answer is the final one
// (no model call). Without any answer the session fails.
func (w *coordination) finishTimeout(ctx workflow.Context) (CoordinationResult, error) {
	w.stopAll(ctx, "timeout")
	winner, how, err := coord.TimeoutWinner(w.state.Ledger, w.state.AnswerOrder)
	if err != nil {
		w.verdict.Reason = err.Error()
		return CoordinationResult{}, w.fail(ctx, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeNoAnswers, nil))
	}
	w.verdict = coord.Verdict{Done: true, Status: coord.StatusTimeout, Winner: winner,
		Reason: "orchestrator timeout: " + winner + " wins by " + how}
	w.setPhase(ctx, coord.PhasePresenting)
	pr, err := w.runPresent(ctx, winner, string(config.FinalWinnerReuse))
	if ctx.Err() != nil {
		return CoordinationResult{}, w.finishCancelled(ctx)
	}
	if err != nil {
		return CoordinationResult{}, w.fail(ctx, temporal.NewNonRetryableApplicationError(
			"coordination timed out and "+winner+"'s stored answer could not be copied to final/; "+
				"every answer stays stored in the session "+w.state.Session, contract.ErrTypePresentFailed, err))
	}
	w.setPhase(ctx, coord.PhaseTimeout)
	return w.result(pr), w.awaitHandlers(ctx)
}

// finishCancelled stops running steps (as stopAll does on a timeout) and records the cancelled phase with
// a disconnected context (the workflow's own is cancelled). Nothing is
// deleted: every stored answer stays. It returns the cancellation error so
// Temporal marks the workflow cancelled.
func (w *coordination) finishCancelled(ctx workflow.Context) error {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	w.stopAll(dctx, "cancelled")
	w.verdict.Status = coord.StatusCancelled
	w.setPhase(dctx, coord.PhaseCancelled)
	return ctx.Err()
}

// fail records the failed phase and returns err.
func (w *coordination) fail(ctx workflow.Context, err error) error {
	w.verdict.Status = coord.StatusFailed
	w.setPhase(ctx, coord.PhaseFailed)
	_ = w.awaitHandlers(ctx)
	return err
}

// failure is the error of a session that ended without an answer.
func (w *coordination) failure() error {
	if coord.Alive(w.state.Ledger) == 0 {
		return temporal.NewNonRetryableApplicationError(
			"all agents failed; the last: "+w.state.LastError,
			contract.ErrTypeAllAgentsFailed, w.lastCause)
	}
	return temporal.NewNonRetryableApplicationError(w.verdict.Reason, contract.ErrTypeNoAnswers, nil)
}

// runPresent runs the Present activity and adds its usage.
func (w *coordination) runPresent(ctx workflow.Context, presenter, strategy string) (contract.PresentResult, error) {
	opts := agentStepOptions(presenter, 0, w.in.StepHeartbeatSeconds)
	opts.Summary = "present · " + presenter + " (" + strategy + ")"
	in := contract.PresentInput{
		SessionID:  w.in.SessionID,
		Presenter:  presenter,
		SessionRef: w.ref(),
		InputsHash: w.state.InputsHash,
		Strategy:   strategy,
		NoVote:     w.state.NoVote,
	}
	if in.InputsHash == "" { // a session created before inputs by reference
		in.Task, in.Config, in.EvalCriteria = w.in.Task, w.in.Config, w.in.EvalCriteria
	}
	var pr contract.PresentResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), contract.NamePresent, in).Get(ctx, &pr)
	if err == nil {
		w.state.Usage = addUsage(w.state.Usage, pr.Usage)
	}
	return pr, err
}

// result builds the workflow result from the presentation.
func (w *coordination) result(pr contract.PresentResult) CoordinationResult {
	answer, cut := contract.Truncate(pr.Answer, contract.MaxFinalAnswerBytes)
	r := CoordinationResult{
		Status:               w.verdict.Status,
		Winner:               w.verdict.Winner,
		FinalAnswer:          answer,
		Truncated:            pr.Truncated || cut,
		Session:              w.state.Session,
		Votes:                coord.Tally(w.state.Ledger),
		Usage:                w.state.Usage,
		PresentationFallback: w.presentFallback,
	}
	for _, a := range w.state.Ledger.Agents {
		if a.Failed {
			if r.FailedAgents == nil {
				r.FailedAgents = map[string]string{}
			}
			r.FailedAgents[a.ID] = a.FailReason
		}
	}
	if pr.Key != "" {
		r.Keys = []string{pr.Key}
	}
	return r
}

// awaitHandlers lets running update handlers finish before the run ends.
func (w *coordination) awaitHandlers(ctx workflow.Context) error {
	return workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
}

// spentBy is the usage a failed activity reported with its error (see
// activities' withUsage); zero when it reported none, as every activity
// recorded before it did.
func spentBy(err error) coord.Usage {
	var ae *temporal.ApplicationError
	var u coord.Usage
	if errors.As(err, &ae) && ae.HasDetails() && ae.Details(&u) == nil {
		return u
	}
	return coord.Usage{}
}

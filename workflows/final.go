package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/runes"
)

// present runs the Present activity the machine asked for; the machine
// decides what follows (the fallback to the stored answer, the end).
func (w *coordination) present(ctx workflow.Context, d coord.Present) {
	opts := agentStepOptions(d.Presenter, 0, w.in.StepHeartbeatSeconds)
	opts.Summary = "present · " + d.Presenter + " (" + d.Strategy + ")"
	in := contract.PresentInput{
		SessionID:  w.state.SessionID,
		Presenter:  d.Presenter,
		SessionRef: w.ref(),
		InputsHash: w.state.InputsHash,
		Strategy:   d.Strategy,
		NoVote:     d.NoVote,
	}
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), contract.NamePresent, in)
	w.wait(f, func(f workflow.Future) {
		var pr contract.PresentResult
		err := f.Get(ctx, &pr)
		if err != nil {
			w.lastCause = err
			if ctx.Err() == nil {
				workflow.GetLogger(ctx).Warn("presentation failed", "presenter", d.Presenter, "strategy", d.Strategy, "error", err)
			}
			w.event(ctx, coord.Presented{Usage: spentBy(err), Reason: failureReason(err)})
			return
		}
		w.presented = pr
		w.event(ctx, coord.Presented{OK: true, Usage: pr.Usage})
	})
}

// finish ends the run as the machine's End says: the final status is
// written in line, so status.json is complete when the workflow ends, and
// update handlers finish first. Nothing is deleted: every stored answer stays.
func (w *coordination) finish(ctx workflow.Context) (CoordinationResult, error) {
	switch w.end.Phase {
	case coord.PhaseCancelled:
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		defer cancel()
		w.publish(dctx)
		return CoordinationResult{}, ctx.Err()
	case coord.PhaseFailed:
		w.publish(ctx)
		_ = w.awaitHandlers(ctx)
		return CoordinationResult{}, w.failure()
	}
	w.publish(ctx)
	return w.result(), w.awaitHandlers(ctx)
}

// failure is the error of a session that ended without an answer.
func (w *coordination) failure() error {
	s := w.m.State
	switch w.end.Cause {
	case coord.CauseAllFailed:
		return temporal.NewNonRetryableApplicationError("all agents failed; the last: "+s.LastError,
			contract.ErrTypeAllAgentsFailed, w.lastCause)
	case coord.CausePresentFailed:
		msg := "the final presentation by " + s.Verdict.Winner + " failed; every answer stays stored in the session " + w.state.Session
		if s.Verdict.Status == coord.StatusTimeout {
			msg = "coordination timed out and " + s.Verdict.Winner + "'s stored answer could not be copied to final/; " +
				"every answer stays stored in the session " + w.state.Session
		}
		return temporal.NewNonRetryableApplicationError(msg, contract.ErrTypePresentFailed, w.lastCause)
	}
	return temporal.NewNonRetryableApplicationError(s.Verdict.Reason, contract.ErrTypeNoAnswers, nil)
}

// result builds the workflow result from the presentation.
func (w *coordination) result() CoordinationResult {
	s, pr := w.m.State, w.presented
	answer, cut := runes.Truncate(pr.Answer, contract.MaxFinalAnswerBytes)
	r := CoordinationResult{
		Status:               s.Verdict.Status,
		Winner:               s.Verdict.Winner,
		FinalAnswer:          answer,
		Truncated:            pr.Truncated || cut,
		Session:              w.state.Session,
		Votes:                coord.Tally(s.Ledger),
		Usage:                s.Usage,
		PresentationFallback: s.Fallback,
	}
	for _, a := range s.Ledger.Agents {
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

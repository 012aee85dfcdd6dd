package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
)

// statusWriter writes status.json from a coroutine of its own, so that
// neither a relaunch nor the presentation waits for a storage write.
// Writes happen one at a time, in order; while one is in flight newer
// snapshots replace each other, so only the latest is written next.
type statusWriter struct {
	next    *contract.WriteStatusInput // the snapshot to write next
	summary string
	busy    bool
}

// startStatusWriter runs the writer until the workflow ends.
func (w *coordination) startStatusWriter(ctx workflow.Context) {
	sw := &statusWriter{}
	w.statusW = sw
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			if err := workflow.Await(ctx, func() bool { return sw.next != nil }); err != nil {
				return // the workflow is cancelled; finishCancelled writes in line
			}
			in, summary := *sw.next, sw.summary
			sw.next, sw.busy = nil, true
			err := workflow.ExecuteActivity(smallActivityCtx(ctx, summary), contract.NameWriteStatus, in).Get(ctx, nil)
			sw.busy = false
			if err != nil {
				workflow.GetLogger(ctx).Warn("could not write status.json", "status", summary, "error", err)
			}
		}
	})
}

// writeStatus stores the current snapshot: in the background while
// coordination goes on, in line (after the writes before it) when the
// phase is final, so status.json is complete when the workflow ends.
func (w *coordination) writeStatus(ctx workflow.Context) {
	in := contract.WriteStatusInput{SessionID: w.state.SessionID, SessionRef: w.ref(), Status: w.snapshot()}
	summary := "status · " + w.phase()
	if sw := w.statusW; sw != nil {
		if !finalPhase(w.phase()) && ctx.Err() == nil {
			sw.next, sw.summary = &in, summary
			return
		}
		// Earlier snapshots are superseded by this one; let a write in
		// flight finish so it cannot land after it.
		sw.next = nil
		_ = workflow.Await(ctx, func() bool { return !sw.busy })
	}
	err := workflow.ExecuteActivity(smallActivityCtx(ctx, summary), contract.NameWriteStatus, in).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("could not write status.json", "phase", w.phase(), "error", err)
	}
}

// flushStatus waits until every snapshot handed to the writer is stored
// (before continuing as new, which ends the writer).
func (w *coordination) flushStatus(ctx workflow.Context) {
	if sw := w.statusW; sw != nil {
		_ = workflow.Await(ctx, func() bool { return sw.next == nil && !sw.busy })
	}
}

func finalPhase(phase string) bool {
	switch phase {
	case coord.PhaseDone, coord.PhaseFailed, coord.PhaseCancelled, coord.PhaseTimeout:
		return true
	}
	return false
}

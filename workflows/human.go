package workflows

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
)

// validateHumanInput rejects an update before it enters history: empty or
// oversized text, or a session past coordination (no agent would read it).
func (w *coordination) validateHumanInput(_ workflow.Context, h HumanInput) error {
	if err := validateHumanInput(h); err != nil {
		return err
	}
	if p := w.phase(); p != coord.PhaseCoordinating {
		return fmt.Errorf("the session is %s: human input is taken only while the agents coordinate", p)
	}
	if w.m != nil && w.m.State.InboxSeq >= contract.MaxHumanInputs {
		return fmt.Errorf("the session already has %d human inputs, the most it takes: put further guidance in one longer input to a new session", w.m.State.InboxSeq)
	}
	return nil
}

// humanInput stores the text as inbox/<seq>.json and returns seq. Running
// agents read it at their next safe point, and every later step sees it,
// through storage: the workflow itself passes nothing to the agents. Seq is
// assigned before the write, so concurrent inputs keep their arrival order;
// a failed write leaves a gap in the numbering, which readers tolerate.
func (w *coordination) humanInput(ctx workflow.Context, h HumanInput) (int, error) {
	// The inbox is written only into a session this run created.
	if err := workflow.Await(ctx, func() bool { return w.m != nil || w.initFailed }); err != nil {
		return 0, err
	}
	if w.initFailed {
		return 0, fmt.Errorf("the session could not be created, so human input cannot be stored; see why the workflow failed")
	}
	seq := 0
	for _, d := range w.m.Step(coord.HumanInput{}) {
		if in, ok := d.(coord.WriteInbox); ok {
			seq = in.Seq
		}
	}
	err := workflow.ExecuteActivity(smallActivityCtx(ctx, "human input "+strconv.Itoa(seq)), contract.NameWriteInbox,
		contract.WriteInboxInput{
			SessionID:  w.state.SessionID,
			SessionRef: w.ref(),
			Seq:        seq,
			Text:       strings.TrimSpace(h.Text),
			At:         workflow.Now(ctx).UTC().Format(time.RFC3339),
		}).Get(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("could not store human input %d; send it again: %w", seq, err)
	}
	workflow.GetLogger(ctx).Info("human input stored", "seq", seq)
	return seq, nil
}

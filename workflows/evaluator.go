package workflows

import (
	"strconv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// evalRun is the round evaluator the workflow is running (seed 001,
// orchestrator_managed_round_evaluator): gated steps of agents that have
// answered wait for it.
type evalRun struct {
	round   int
	visible map[string]int
	cancel  workflow.CancelFunc
}

// evaluatorManaged is whether the workflow runs the round evaluator:
// checklist-gated voting with round_evaluator_before_checklist and
// orchestrator_managed_round_evaluator. Without the last, each agent's own
// step runs it (engine/step).
func (w *coordination) evaluatorManaged() bool {
	o := w.orch
	return o.VotingSensitivity == config.SensitivityChecklistGated && o.RoundEvaluatorBeforeChecklist && o.OrchestratorManagedRoundEvaluator
}

// latestAnswers is the answer set a round evaluation reads: agent → step
// of its latest answer.
func latestAnswers(l coord.Ledger) map[string]int {
	out := map[string]int{}
	for _, a := range l.Agents {
		if a.LatestAnswerStep > 0 {
			out[a.ID] = a.LatestAnswerStep
		}
	}
	return out
}

// holdForEvaluation returns the plans that may launch now. Before round 2+
// — a gated step of an agent that has answered — the answers must have
// been evaluated. Those steps wait for the end of the round — every alive
// agent has its first answer and no step runs — and then, when the answers
// changed since the last evaluation, for the evaluator. Rounds are thus
// barriers with the managed evaluator, as its "one blocking run before
// round 2+" asks. First answers and vote-only steps never wait.
func (w *coordination) holdForEvaluation(ctx workflow.Context, sel workflow.Selector, plans []launchPlan) []launchPlan {
	if !w.evaluatorManaged() {
		return plans
	}
	latest := latestAnswers(w.state.Ledger)
	current := w.evaluating == nil && w.sameAnswers(latest, w.state.EvalVisible)
	var now []launchPlan
	held := false
	for _, p := range plans {
		a := w.state.Ledger.Find(p.Agent)
		if current || a.AnswerCount == 0 || (p.Mode != coord.ModeVoting && p.Mode != coord.ModeDecomposition) {
			now = append(now, p)
			continue
		}
		held = true
	}
	if held && w.evaluating == nil && len(w.running) == 0 && !firstAnswersPending(w.state.Ledger) && workflow.GetVersion(ctx, roundEvaluatorChange, workflow.DefaultVersion, 1) == 1 {
		w.startEvaluation(ctx, sel, latest)
	}
	return now
}

// firstAnswersPending: some alive agent is still on its first answer, so
// round 1 is not over and there is nothing whole to evaluate yet.
func firstAnswersPending(l coord.Ledger) bool {
	for _, a := range l.Agents {
		if !a.Failed && a.AnswerCount == 0 && (a.Running || a.LastAction == coord.ActionNone) {
			return true
		}
	}
	return false
}

// roundEvaluatorChange gates the managed round evaluator; no run recorded
// before it had the settings that reach it.
const roundEvaluatorChange = "managed-round-evaluator"

// sameAnswers compares two answer sets by lookups in ledger order (no map
// iteration in workflow code).
func (w *coordination) sameAnswers(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for _, ag := range w.state.Ledger.Agents {
		if a[ag.ID] != b[ag.ID] {
			return false
		}
	}
	return true
}

// evaluation is the round evaluation a step launched now works from.
func (w *coordination) evaluation() int {
	if !w.evaluatorManaged() || !w.state.EvalOK || !w.sameAnswers(latestAnswers(w.state.Ledger), w.state.EvalVisible) {
		return 0
	}
	return w.state.EvalRound
}

// startEvaluation runs the RoundEvaluator activity over the current
// answers, with the backend of the first alive agent.
func (w *coordination) startEvaluation(ctx workflow.Context, sel workflow.Selector, visible map[string]int) {
	round := max(w.state.EvalRound, 1) + 1
	evaluator := coord.Presenter(w.state.Ledger, "")
	w.state.Launches++
	ectx, cancel := workflow.WithCancel(ctx)
	w.evaluating = &evalRun{round: round, visible: visible, cancel: cancel}
	opts := agentStepOptions(evaluator, 0, w.in.StepHeartbeatSeconds)
	opts.Summary = "round evaluator · before round " + strconv.Itoa(round)
	opts.StartToCloseTimeout = 30 * time.Minute
	in := contract.RoundEvaluatorInput{
		SessionID: w.in.SessionID, SessionRef: w.ref(), InputsHash: w.state.InputsHash,
		Round: round, Visible: visible, Evaluator: evaluator, Launch: w.state.Launches,
	}
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(ectx, opts), contract.NameRoundEvaluator, in)
	sel.AddFuture(f, func(f workflow.Future) {
		var res contract.RoundEvaluatorResult
		err := f.Get(ctx, &res)
		run := w.evaluating
		w.evaluating = nil
		if run == nil || ctx.Err() != nil {
			return
		}
		w.changed = true
		w.state.EvalVisible = run.visible
		if err != nil {
			// The agents go on without a handoff: their checklists still
			// gate them; the failure is in the log and the history. Its
			// round number is used up, so the next evaluation gets a folder
			// of its own.
			w.state.EvalRound, w.state.EvalOK = run.round, false
			w.state.Usage = w.state.Usage.Add(spentBy(err))
			workflow.GetLogger(ctx).Warn("the round evaluator failed; the round goes on without its packet",
				"round", run.round, "error", failureReason(err))
			return
		}
		w.state.EvalRound, w.state.EvalOK = res.Round, true
		w.state.Usage = w.state.Usage.Add(res.Usage)
	})
}

// stopEvaluation cancels a running evaluator (timeout, cancellation).
func (w *coordination) stopEvaluation() {
	if w.evaluating != nil {
		w.evaluating.cancel()
		w.evaluating = nil
	}
}

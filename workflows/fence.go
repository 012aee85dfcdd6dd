package workflows

import (
	"slices"
	"strconv"

	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
)

// stopAll abandons every running step (timeout, cancellation). With
// fenced steps it fences them all first: those fenced off are cancelled and
// never write; those that had committed are let finish, and their results
// recorded, so what the session stores is what the workflow decided on.
// ctx must not be cancelled (a disconnected one after cancellation).
func (w *coordination) stopAll(ctx workflow.Context, reason string) {
	w.stopEvaluation()
	runs := slices.Clone(w.running)
	if !w.fenced {
		for _, r := range runs {
			w.abandon(r)
		}
		return
	}
	fences := make([]workflow.Future, len(runs))
	for i, r := range runs {
		fences[i] = w.fenceStep(ctx, r, reason)
	}
	var committed []*stepRun
	for i, r := range runs {
		var res contract.FenceStepResult
		err := fences[i].Get(ctx, &res)
		if err == nil && res.Committed {
			committed = append(committed, r)
			continue
		}
		if err != nil {
			workflow.GetLogger(ctx).Error("could not fence a step; cancelling it anyway",
				"agent", r.agent, "step", r.step, "launch", r.launch, "error", err)
		}
		w.drop(r)
	}
	for _, r := range committed {
		var res contract.AgentStepResult
		err := r.fut.Get(ctx, &res)
		r.fencing = false
		w.record(ctx, r, res, err)
	}
}

// fenceAsync fences a running step off (update_mode restart) without
// waiting; fenceDone acts on the answer.
func (w *coordination) fenceAsync(ctx workflow.Context, sel workflow.Selector, r *stepRun, reason string) {
	r.fencing = true
	sel.AddFuture(w.fenceStep(ctx, r, reason), func(f workflow.Future) { w.fenceDone(ctx, sel, r, f) })
}

// fenceStep runs FenceStep for one launch.
func (w *coordination) fenceStep(ctx workflow.Context, r *stepRun, reason string) workflow.Future {
	return workflow.ExecuteActivity(w.smallCtx(ctx, "fence "+r.agent+" · step "+strconv.Itoa(r.step)), contract.NameFenceStep,
		contract.FenceStepInput{SessionID: w.in.SessionID, SessionRef: w.ref(), Agent: r.agent, Step: r.step, Launch: r.launch, Reason: reason})
}

// fenceDone acts on a restart's fence: a launch fenced off is cancelled and
// whatever it returned is ignored; a launch that had committed goes on, and
// its result (perhaps already in) is recorded as any other. A fence that
// could not be stored leaves the step running: abandoning it unfenced
// could let it write after its relaunch.
func (w *coordination) fenceDone(ctx workflow.Context, sel workflow.Selector, r *stepRun, f workflow.Future) {
	if r.abandoned || !r.fencing {
		return // stopAll took over
	}
	var res contract.FenceStepResult
	err := f.Get(ctx, &res)
	r.fencing = false
	switch {
	case err == nil && !res.Committed:
		w.drop(r)
		workflow.GetLogger(ctx).Info("a restarted step is fenced off; its agent is relaunched with the next step number",
			"agent", r.agent, "step", r.step, "launch", r.launch)
		return
	case err != nil:
		workflow.GetLogger(ctx).Warn("could not fence a step for a restart; it goes on",
			"agent", r.agent, "step", r.step, "launch", r.launch, "error", err)
	}
	if r.done && w.record(ctx, r, r.res, r.err) && ctx.Err() == nil {
		w.restartPeers(ctx, sel, r.agent)
	}
}

// drop abandons a fenced-off step: its number is taken, so the agent's
// next launch gets the next one.
func (w *coordination) drop(r *stepRun) {
	w.abandon(r)
	w.takeStep(r.agent, r.step)
}

// takeStep records that the agent's step number step is not to be used
// again (CarriedState.TakenSteps).
func (w *coordination) takeStep(agent string, step int) {
	if w.state.TakenSteps == nil {
		w.state.TakenSteps = map[string]int{}
	}
	w.state.TakenSteps[agent] = max(w.state.TakenSteps[agent], step)
	if a := w.state.Ledger.Find(agent); a != nil && w.capGivenUp {
		a.GivenUpStep = max(a.GivenUpStep, step)
	}
}

package workflows

import (
	"fmt"
	"strconv"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
)

// snapshot is the status query's answer and status.json: coord.Summarize
// of the ledger under the verdict, plus usage.
func (w *coordination) snapshot() coord.Status {
	s := coord.Summarize(w.state.Ledger, w.verdict, w.phase)
	if w.state.NoVote && w.phase == coord.PhaseCoordinating {
		s.Relaunch = coord.RelaunchFor(w.state.Ledger, w.verdictOptions())
	}
	s.Usage = w.state.Usage
	s.PresentationFallback = w.presentFallback
	return s
}

// setPhase moves to a new phase and tells everyone who watches.
func (w *coordination) setPhase(ctx workflow.Context, phase string) {
	w.phase = phase
	w.publish(ctx)
}

// publish updates the Web UI details and search attributes, and writes
// status.json. status.json is a snapshot (the query serves the same), so a
// failed write is logged and coordination goes on.
func (w *coordination) publish(ctx workflow.Context) {
	w.details(ctx)
	w.upsertSearchAttributes(ctx)
	w.writeStatus(ctx)
}

// details shows the state as Markdown in the Web UI.
func (w *coordination) details(ctx workflow.Context) {
	workflow.SetCurrentDetails(ctx, w.markdown())
}

func (w *coordination) markdown() string {
	var b strings.Builder
	b.WriteString("**Phase:** " + w.phase)
	if w.verdict.Winner != "" {
		b.WriteString(" · **Winner:** `" + w.verdict.Winner + "` (" + w.verdict.Status + ")")
	}
	if w.state.RevoteRound > 0 {
		b.WriteString(" · **Re-votes:** " + strconv.Itoa(w.state.RevoteRound))
	}
	if w.evaluating != nil {
		b.WriteString(" · **Round evaluator:** running before round " + strconv.Itoa(w.evaluating.round))
	} else if w.state.EvalRound > 0 {
		b.WriteString(" · **Round evaluation:** before round " + strconv.Itoa(w.state.EvalRound))
	}
	b.WriteString("\n\n| agent | state | answers | vote | step |\n|---|---|---|---|---|\n")
	for _, a := range w.state.Ledger.Agents {
		state, step := string(coord.StateOf(a)), strconv.Itoa(a.LatestStep)
		if c := a.Checklist; c != nil && c.Verdict != "" {
			state += " · checklist " + c.Verdict
		}
		if r := w.runOf(a.ID); r != nil {
			state = "running (" + string(r.mode) + ")"
			step = fmt.Sprintf("%d → %d", a.LatestStep, r.step)
		}
		vote := "—"
		if v := coord.CurrentVote(a); v != nil {
			vote = "`" + v.Target + "`"
			if coord.Stale(w.state.Ledger, v) {
				vote += " (stale)"
			}
		}
		b.WriteString(fmt.Sprintf("| `%s` | %s | %d | %s | %s |\n", a.ID, state, a.AnswerCount, vote, step))
	}
	b.WriteString(fmt.Sprintf("\n%d launches · %d input / %d output tokens · cost %s\n",
		w.state.Launches, w.state.Usage.InputTokens, w.state.Usage.OutputTokens, w.state.Usage.Cost()))
	return b.String()
}

func (w *coordination) runOf(agent string) *stepRun {
	for _, r := range w.running {
		if r.agent == agent {
			return r
		}
	}
	return nil
}

// askSearchAttributes starts the question searchAttributesAvailable reads.
func (w *coordination) askSearchAttributes(ctx workflow.Context) workflow.Future {
	return workflow.ExecuteActivity(w.smallCtx(ctx, "search attributes"), contract.NameSearchAttrsSet)
}

// searchAttributesAvailable asks once per session whether the namespace
// defines ConclavePhase and ConclaveWinner; without them an upsert would fail
// the workflow task, so any doubt means no.
func (w *coordination) searchAttributesAvailable(ctx workflow.Context, f workflow.Future) bool {
	var ok bool
	if err := f.Get(ctx, &ok); err != nil {
		workflow.GetLogger(ctx).Warn("cannot tell whether the search attributes exist; not using them", "error", err)
		return false
	}
	return ok
}

// upsertSearchAttributes sets ConclavePhase and ConclaveWinner when they
// changed (each upsert is a history event).
func (w *coordination) upsertSearchAttributes(ctx workflow.Context) {
	if !w.state.SearchAttributes {
		return
	}
	var updates []temporal.SearchAttributeUpdate
	if w.phase != w.saPhase {
		updates = append(updates, temporal.NewSearchAttributeKeyKeyword(contract.SearchAttrPhase).ValueSet(w.phase))
	}
	if w.verdict.Winner != "" && w.verdict.Winner != w.saWinner {
		updates = append(updates, temporal.NewSearchAttributeKeyKeyword(contract.SearchAttrWinner).ValueSet(w.verdict.Winner))
	}
	if len(updates) == 0 {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		workflow.GetLogger(ctx).Warn("could not upsert search attributes", "error", err)
		return
	}
	w.saPhase, w.saWinner = w.phase, w.verdict.Winner
}

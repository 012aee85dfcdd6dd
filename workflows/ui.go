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

// snapshot is the status query's answer and status.json.
func (w *coordination) snapshot() coord.Status {
	if w.m == nil { // the session is being created
		return coord.Summarize(coord.Ledger{}, coord.Verdict{}, coord.PhaseCoordinating)
	}
	return w.m.Status()
}

// phase is the session's phase.
func (w *coordination) phase() string {
	if w.m == nil {
		return coord.PhaseCoordinating
	}
	return w.m.State.Phase
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
	s := w.m.State
	b.WriteString("**Phase:** " + s.Phase)
	if s.Verdict.Winner != "" {
		b.WriteString(" · **Winner:** `" + s.Verdict.Winner + "` (" + s.Verdict.Status + ")")
	}
	if s.RevoteRound > 0 {
		b.WriteString(" · **Re-votes:** " + strconv.Itoa(s.RevoteRound))
	}
	if e := s.Eval.Running; e != nil {
		b.WriteString(" · **Round evaluator:** running before round " + strconv.Itoa(e.Round))
	} else if s.Eval.Round > 0 {
		b.WriteString(" · **Round evaluation:** before round " + strconv.Itoa(s.Eval.Round))
	}
	b.WriteString("\n\n| agent | state | answers | vote | step |\n|---|---|---|---|---|\n")
	for _, a := range s.Ledger.Agents {
		state, step := string(coord.StateOf(a)), strconv.Itoa(a.LatestStep)
		if c := a.Checklist; c != nil && c.Verdict != "" {
			state += " · checklist " + c.Verdict
		}
		if r := w.runOf(a.ID); r != nil {
			state = "running (" + string(r.Mode) + ")"
			step = fmt.Sprintf("%d → %d", a.LatestStep, r.Step)
		}
		vote := "—"
		if v := coord.CurrentVote(a); v != nil {
			vote = "`" + v.Target + "`"
			if coord.Stale(s.Ledger, v) {
				vote += " (stale)"
			}
		}
		b.WriteString(fmt.Sprintf("| `%s` | %s | %d | %s | %s |\n", a.ID, state, a.AnswerCount, vote, step))
	}
	b.WriteString(fmt.Sprintf("\n%d launches · %d input / %d output tokens · cost %s\n",
		s.Launches, s.Usage.InputTokens, s.Usage.OutputTokens, s.Usage.Cost()))
	return b.String()
}

func (w *coordination) runOf(agent string) *coord.Run {
	for i, r := range w.m.State.Running {
		if r.Agent == agent {
			return &w.m.State.Running[i]
		}
	}
	return nil
}

// upsertSearchAttributes sets ConclavePhase and ConclaveWinner when they
// changed (each upsert is a history event).
func (w *coordination) upsertSearchAttributes(ctx workflow.Context) {
	if !w.state.SearchAttributes {
		return
	}
	var updates []temporal.SearchAttributeUpdate
	phase, winner := w.phase(), w.m.State.Verdict.Winner
	if phase != w.saPhase {
		updates = append(updates, temporal.NewSearchAttributeKeyKeyword(contract.SearchAttrPhase).ValueSet(phase))
	}
	if winner != "" && winner != w.saWinner {
		updates = append(updates, temporal.NewSearchAttributeKeyKeyword(contract.SearchAttrWinner).ValueSet(winner))
	}
	if len(updates) == 0 {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		workflow.GetLogger(ctx).Warn("could not upsert search attributes", "error", err)
		return
	}
	w.saPhase, w.saWinner = phase, winner
}

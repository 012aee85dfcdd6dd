package step

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

// PresentOptions describe the final presentation.
type PresentOptions struct {
	Store     storage.Store
	Config    *config.Config
	Presenter string
	Task      string
	// Strategy winner_present and synthesize run the presenter's model;
	// winner_reuse copies its latest stored answer (also the timeout path).
	Strategy     config.FinalAnswerStrategy
	EvalCriteria []string
	Model        llm.Model // unused for winner_reuse
	Tag          string
	// Owner is the session owner's id, part of the checkpoint's binding.
	Owner string
	// NoVote: the session had no vote round (skip_voting, quick
	// synthesize), so a synthesis is neutral whatever votes are stored.
	NoVote       bool
	OnCheckpoint func(turns int)
	// Logf reports what a person may want to know, such as a checkpoint
	// that was not resumed; nil discards it.
	Logf func(format string, args ...any)
	Now  func() time.Time
}

// Present writes final/answer.json, final/answer.md and final/workspace/.
func Present(ctx context.Context, o PresentOptions) (*session.FinalAnswer, coord.Usage, error) {
	var usage coord.Usage
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	snap, err := session.Load(ctx, o.Store)
	if err != nil {
		return nil, usage, err
	}
	snap.KeepTeam() // folders of agents outside the team are not counted
	if err := snap.Include(o.Config.AgentIDs()); err != nil {
		return nil, usage, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	presenter, ok := snap.Agent(o.Presenter)
	if !ok {
		return nil, usage, fmt.Errorf("%w: presenter %q is not an agent of the session", ErrBadInput, o.Presenter)
	}
	if !anyAnswer(snap) {
		// Every agent stopped (decomposition) or failed without an answer:
		// a presenter shown "(no answers available yet)" would invent one.
		return nil, usage, fmt.Errorf("%w: nothing to present: no agent of the session recorded an answer", ErrBadInput)
	}
	anon := coord.AnonymousIDs(teamIDs(snap))
	latest := presenter.Latest()
	if latest == nil && o.Strategy != config.FinalSynthesize {
		return nil, usage, fmt.Errorf("%w: presenter %s has no answer to present", ErrBadInput, o.Presenter)
	}
	final := &session.FinalAnswer{AgentID: o.Presenter, Label: coord.FinalLabel(anon[o.Presenter]), Strategy: string(o.Strategy)}
	if latest != nil {
		final.Source = coord.Label(anon[o.Presenter], latest.Revision)
		final.Answer = latest.Text
	}
	if err := session.DeletePrefix(ctx, o.Store, session.FinalWorkspacePrefix); err != nil {
		return nil, usage, err
	}
	if latest != nil && latest.Workspace != "" {
		if err := storage.CopyPrefix(ctx, o.Store, latest.Workspace, session.FinalWorkspacePrefix); err != nil {
			return nil, usage, fmt.Errorf("copy the winning workspace: %w", err)
		}
	}
	if o.Strategy != config.FinalWinnerReuse {
		text, u, err := present(ctx, o, snap)
		usage = u
		if err != nil {
			return nil, usage, err
		}
		final.Answer = text
	}
	final.Timestamp = session.Timestamp(o.Now())
	if err := session.WriteJSON(ctx, o.Store, session.FinalAnswerKey, final); err != nil {
		return nil, usage, err
	}
	if err := o.Store.Put(ctx, session.FinalMarkdownKey, []byte(strings.TrimRight(final.Answer, "\n")+"\n")); err != nil {
		return nil, usage, fmt.Errorf("write %s: %w", session.FinalMarkdownKey, err)
	}
	return final, usage, nil
}

// present runs the presenter's model over every latest answer; files it
// writes land in final/workspace/ next to the winner's.
func present(ctx context.Context, o PresentOptions, snap *session.Snapshot) (string, coord.Usage, error) {
	agentCfg, ok := o.Config.Agent(o.Presenter)
	if !ok {
		return "", coord.Usage{}, fmt.Errorf("%w: presenter %q is not in the config", ErrBadInput, o.Presenter)
	}
	tmp, err := os.MkdirTemp("", "conclave-present-")
	if err != nil {
		return "", coord.Usage{}, err
	}
	defer os.RemoveAll(tmp)
	p := &prep{store: o.Store, tmp: tmp, anon: coord.AnonymousIDs(teamIDs(snap))}
	in, err := p.input(ctx, snap, Options{Agent: o.Presenter, Config: o.Config, Mode: coord.ModePresent, Model: o.Model}, agentCfg)
	if err != nil {
		return "", coord.Usage{}, err
	}
	in.Task, in.EvalCriteria, in.Tag = o.Task, o.EvalCriteria, o.Tag
	in.Synthesize = o.Strategy == config.FinalSynthesize
	in.Decomposition = o.Config.Orchestrator.CoordinationMode == config.ModeDecomposition
	if self, ok := snap.Agent(o.Presenter); ok && self.Latest() != nil {
		in.Winner = coord.Label(p.anon[o.Presenter], self.Latest().Revision)
	}
	// Votes chose the presenter when fresh votes name it; a stalled or
	// vote-less session gets the neutral synthesis.
	in.Voted = !o.NoVote && coord.Tally(snap.Ledger())[o.Presenter] > 0
	in.Checkpoint = agent.Checkpointer[round.State](o.Store, session.FinalTraceKey, 0, o.OnCheckpoint)
	in.Binding = binding(o.Owner, 0, &in)
	data, err := o.Store.Get(ctx, session.FinalTraceKey)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return "", coord.Usage{}, fmt.Errorf("read the checkpoint %s: %w", session.FinalTraceKey, err)
	}
	in.Prior = prior(o.Store, session.FinalTraceKey, data, err == nil)
	in.Logf = func(f string, args ...any) { o.Logf("presentation by %s: "+f, append([]any{o.Presenter}, args...)...) }
	out, err := round.Run(ctx, in)
	if err != nil {
		return "", coord.Usage{}, err
	}
	if dir := nonEmptyDir(in.Workspace.Dir); dir != "" {
		if err := storage.PutDir(ctx, o.Store, session.FinalWorkspacePrefix, dir); err != nil {
			return "", out.Usage, fmt.Errorf("store the final workspace: %w", err)
		}
	}
	return out.Answer, out.Usage, nil
}

// anyAnswer reports whether some agent of the session has an answer.
func anyAnswer(snap *session.Snapshot) bool {
	for i := range snap.Agents {
		if snap.Agents[i].Latest() != nil {
			return true
		}
	}
	return false
}

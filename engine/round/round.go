package round

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
)

const (
	defaultMaxAttempts = 3
	defaultMaxTurns    = 30
)

// Run runs one agent for one step. It returns the workflow action, or an
// *EnforcementError / *TurnLimitError, or the model's (classified) error.
func Run(ctx context.Context, in Input) (*Outcome, error) {
	if err := check(&in); err != nil {
		return nil, err
	}
	p := &policy{in: &in, anon: coord.AnonymousIDs(in.Agents), real: coord.RealIDs(in.Agents)}
	cfg := agent.Config[State]{
		Model: in.Model, ModelName: in.ModelName, Temperature: in.Temperature, MaxTokens: in.MaxTokens,
		OnChunk: in.OnChunk, MaxTurns: in.MaxTurns, Files: agent.Files{Workspace: in.Workspace, Tools: in.Tools}, CallScope: in.CallScope,
		Tag: in.Tag, Binding: in.Binding, Prior: in.Prior, Logf: in.Logf, Checkpoint: in.Checkpoint,
	}
	cfg.Messages, cfg.State = p.start() // used unless the prior checkpoint is resumed
	t, err := agent.Run(ctx, cfg, p)
	if err != nil {
		return nil, err
	}
	out := *t.State.Final
	out.Transcript = t
	return &out, nil
}

func check(in *Input) error {
	if in.Model == nil {
		return errors.New("round: no model")
	}
	if in.Agent == "" || strings.TrimSpace(in.Task) == "" {
		return errors.New("round: the agent id and the task are required")
	}
	found := false
	for _, a := range in.Agents {
		found = found || a == in.Agent
	}
	if !found {
		return fmt.Errorf("round: agent %q is not among the session's agents %v", in.Agent, in.Agents)
	}
	if in.Mode == "" {
		in.Mode = coord.ModeVoting
	}
	if !in.Mode.Valid() {
		return fmt.Errorf("round: unknown mode %q", in.Mode)
	}
	if in.Mode == coord.ModeVoteOnly && len(in.Answers) == 0 && in.Prior == nil {
		return fmt.Errorf("round: agent %s may only vote, but there is no answer to vote for", in.Agent)
	}
	if in.MaxAttempts <= 0 {
		in.MaxAttempts = defaultMaxAttempts
	}
	if in.MaxTurns <= 0 {
		in.MaxTurns = defaultMaxTurns
	}
	return nil
}

// policy is the coordination policy (and, in mode present, the
// presentation policy) of the agent-step engine.
type policy struct {
	in   *Input
	anon map[string]string // real → anonymous
	real map[string]string // anonymous → real
}

func (p *policy) start() ([]llm.Message, State) {
	s := State{SeenSteps: map[string]int{}, HumanSeen: len(p.in.Human), StartedAt: p.now()}
	for _, a := range p.in.Answers {
		s.SeenSteps[a.Agent] = a.Step
		s.Known = append(s.Known, a)
	}
	s.Shown = copySeen(s.SeenSteps)
	user := userMessage(p.in)
	if p.gated() {
		user += checklistContext(p.in)
	}
	return []llm.Message{
		{Role: llm.RoleSystem, Content: systemMessage(p.in)},
		{Role: llm.RoleUser, Content: user},
	}, s
}

func (p *policy) Finished(t *Transcript) bool { return t.State.Final != nil }

// Check refuses to resume an attempt that failed for good (a new run
// starts over) and a recorded action that breaks the rules it was made
// under: it is validated again exactly as the model's call was, so a
// hand-edited checkpoint cannot store a vote for an unknown agent or an
// empty answer.
func (p *policy) Check(t *Transcript) error {
	s := &t.State
	if s.SeenSteps == nil {
		s.SeenSteps = map[string]int{}
	}
	for _, k := range s.Known {
		if _, ok := p.anon[k.Agent]; !ok {
			return fmt.Errorf("it lists an answer of %q, who is not an agent of the session", k.Agent)
		}
	}
	if err := p.checkChecklist(t); err != nil {
		return err
	}
	if s.Final == nil {
		if s.Attempts >= p.in.MaxAttempts || t.Turns >= p.in.MaxTurns || s.Denied >= MaxDeniedAfterTimeout {
			return fmt.Errorf("the attempt it records failed for good (%d enforcement attempts, %d model turns, %d tool calls refused after the round timeout)", s.Attempts, t.Turns, s.Denied)
		}
		return nil
	}
	return p.recheck(t)
}

func (p *policy) OutOfTurns(t *Transcript) error {
	return &TurnLimitError{Agent: p.in.Agent, Turns: t.Turns}
}

// SafePoint injects, after a tool batch or an enforcement message and
// before the next model call, at most one update message: unseen peer
// answers (after the agent's first answer, up to the cap, never to the
// presenter) and human input.
func (p *policy) SafePoint(ctx context.Context, t *Transcript) ([]llm.Message, error) {
	s := &t.State
	var u Update
	if p.in.Inbox != nil {
		var err error
		if u, err = p.in.Inbox.Unseen(ctx, s.SeenSteps, s.HumanSeen); err != nil {
			return nil, fmt.Errorf("read the inbox of %s: %w", p.in.Agent, err)
		}
	}
	peersAllowed := !p.in.DisableInjection && p.peerWindowOpen(s) && p.in.HasAnswered && p.in.Mode != coord.ModePresent && !s.WrapUpSent
	var fresh []Answer
	if peersAllowed {
		fresh = p.admit(s, u.Answers)
	}
	var wrapUp string
	if !s.WrapUpSent && p.in.RoundTimeout > 0 && p.in.Mode != coord.ModePresent && p.elapsed(t) >= p.in.RoundTimeout {
		wrapUp = wrapUpMessage(p.in, p.allowedAfterTimeout(t), p.elapsed(t))
		s.WrapUpSent = true
	}
	if len(fresh) == 0 && len(u.Human) == 0 {
		if wrapUp == "" {
			return nil, nil
		}
		return []llm.Message{{Role: llm.RoleUser, Content: wrapUp}}, nil
	}
	old := map[string]Answer{}
	for _, k := range s.Known {
		old[p.anon[k.Agent]] = k
	}
	msg := llm.Message{Role: llm.RoleUser, Content: updateMessage(p.in, old, fresh, u.Human)}
	if wrapUp != "" {
		msg.Content += "\n\n" + wrapUp
	}
	for _, a := range fresh {
		s.SeenSteps[a.Agent] = a.Step
		s.setKnown(a)
	}
	if len(fresh) > 0 {
		s.Injections++
	}
	s.HumanSeen += len(u.Human)
	return []llm.Message{msg}, nil
}

// admit picks the unseen peer answers to inject (seed 001:
// max_midstream_injections_per_round caps unseen *sources*): every newer
// revision of a source already injected in this step, and new sources
// while the cap has room, the newest first (latest stored timestamp; on a
// tie, the first agent in anonymous order). The others stay pending — not
// seen, not known — and are shown at the agent's next step. The choice is
// kept in the transcript's state, so a resumed step makes the same one.
func (p *policy) admit(s *State, answers []Answer) []Answer {
	var fresh, waiting []Answer
	for _, a := range answers {
		switch {
		case a.Agent == p.in.Agent || a.Step <= s.SeenSteps[a.Agent]:
		case slices.Contains(s.InjectedSources, a.Agent):
			fresh = append(fresh, a)
		default:
			waiting = append(waiting, a)
		}
	}
	sort.SliceStable(waiting, func(i, j int) bool {
		ti, tj := stamp(waiting[i].Timestamp), stamp(waiting[j].Timestamp)
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return p.anon[waiting[i].Agent] < p.anon[waiting[j].Agent]
	})
	for _, a := range waiting {
		if len(s.InjectedSources) >= p.in.MaxMidstreamInjections {
			break
		}
		s.InjectedSources = append(s.InjectedSources, a.Agent)
		fresh = append(fresh, a)
	}
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].Label < fresh[j].Label })
	return fresh
}

func (p *policy) now() time.Time {
	if p.in.Now != nil {
		return p.in.Now()
	}
	return time.Now()
}

// elapsed is the time since the step first started (StartedAt survives
// resumes; a transcript without it starts counting now).
func (p *policy) elapsed(t *Transcript) time.Duration {
	if t.State.StartedAt.IsZero() {
		t.State.StartedAt = p.now()
	}
	return p.now().Sub(t.State.StartedAt)
}

// pastHardTimeout reports whether the soft timeout and its grace have
// passed: from then on only workflow tools run.
func (p *policy) pastHardTimeout(t *Transcript) bool {
	return p.in.RoundTimeout > 0 && p.in.Mode != coord.ModePresent &&
		p.elapsed(t) >= p.in.RoundTimeout+p.in.RoundTimeoutGrace
}

// stamp parses a stored timestamp; one that does not parse is the oldest.
func stamp(v string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}
	}
	return t
}

func (s *State) setKnown(a Answer) {
	for i := range s.Known {
		if s.Known[i].Agent == a.Agent {
			s.Known[i] = a
			return
		}
	}
	s.Known = append(s.Known, a)
}

func copySeen(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

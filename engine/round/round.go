package round

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	r := &runner{in: &in, anon: coord.AnonymousIDs(in.Agents), real: coord.RealIDs(in.Agents)}
	if t := in.Resume; t != nil && t.Final == nil && (t.Attempts >= in.MaxAttempts || t.Turns >= in.MaxTurns) {
		in.Resume = nil // that attempt failed for good: a new run starts over
	}
	if in.Resume == nil {
		r.t = r.start()
		return r.loop(ctx)
	}
	// The workspace of the attempt being resumed is gone with its worker;
	// every write is in the transcript, so it is rebuilt first — also for a
	// finished step, whose files are about to be stored (again).
	r.t = in.Resume
	if err := r.replayWrites(); err != nil {
		return nil, err
	}
	if r.t.Final != nil {
		out := *r.t.Final
		out.Transcript = r.t
		return &out, nil
	}
	return r.loop(ctx)
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
		in.Mode = ModeVoting
	}
	if _, ok := toolMode[in.Mode]; !ok {
		return fmt.Errorf("round: unknown mode %q", in.Mode)
	}
	if in.Mode == ModeVoteOnly && len(in.Answers) == 0 && in.Resume == nil {
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

type runner struct {
	in   *Input
	t    *Transcript
	anon map[string]string // real → anonymous
	real map[string]string // anonymous → real
}

func (r *runner) start() *Transcript {
	t := &Transcript{Tag: r.in.Tag, SeenSteps: map[string]int{}, HumanSeen: len(r.in.Human)}
	for _, a := range r.in.Answers {
		t.SeenSteps[a.Agent] = a.Step
		t.Known = append(t.Known, a)
	}
	t.Messages = []llm.Message{
		{Role: "system", Content: systemMessage(r.in)},
		{Role: "user", Content: userMessage(r.in)},
	}
	return t
}

func (r *runner) loop(ctx context.Context) (*Outcome, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if last := r.t.Messages[len(r.t.Messages)-1]; last.Role == "assistant" {
			out, err := r.handle(ctx, last)
			if out != nil || err != nil {
				return out, err
			}
			if err := r.inject(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if r.t.Turns >= r.in.MaxTurns {
			return nil, &TurnLimitError{Agent: r.in.Agent, Turns: r.t.Turns}
		}
		resp, err := r.in.Model.Complete(ctx, llm.Request{
			Model: r.in.ModelName, Messages: r.t.Messages, Tools: r.toolSpecs(),
			Temperature: r.in.Temperature, MaxTokens: r.in.MaxTokens, OnChunk: r.in.OnChunk,
		})
		if err != nil {
			return nil, err
		}
		msg := resp.Message
		msg.Role = "assistant"
		r.t.Messages = append(r.t.Messages, msg)
		r.t.Turns++
		r.t.Usage = r.t.Usage.Add(resp.Usage)
		if err := r.checkpoint(ctx); err != nil {
			return nil, err
		}
	}
}

func (r *runner) checkpoint(ctx context.Context) error {
	if r.in.Checkpoint == nil {
		return nil
	}
	if err := r.in.Checkpoint(ctx, r.t); err != nil {
		return fmt.Errorf("checkpoint the transcript of %s: %w", r.in.Agent, err)
	}
	return nil
}

// inject runs at a safe point: after a tool batch or an enforcement message,
// before the next model call. It appends at most one update message.
func (r *runner) inject(ctx context.Context) error {
	if r.in.Inbox == nil {
		return nil
	}
	u, err := r.in.Inbox.Unseen(ctx, r.t.SeenSteps, r.t.HumanSeen)
	if err != nil {
		return fmt.Errorf("read the inbox of %s: %w", r.in.Agent, err)
	}
	peersAllowed := !r.in.DisableInjection && r.in.HasAnswered &&
		r.t.Injections < r.in.MaxMidstreamInjections && r.in.Mode != ModePresent
	var fresh []Answer
	if peersAllowed {
		for _, a := range u.Answers {
			if a.Step > r.t.SeenSteps[a.Agent] {
				fresh = append(fresh, a)
			}
		}
	}
	if len(fresh) == 0 && len(u.Human) == 0 {
		return nil
	}
	old := map[string]Answer{}
	for _, k := range r.t.Known {
		old[r.anon[k.Agent]] = k
	}
	r.t.Messages = append(r.t.Messages, llm.Message{Role: "user", Content: updateMessage(old, fresh, u.Human)})
	for _, a := range fresh {
		r.t.SeenSteps[a.Agent] = a.Step
		r.setKnown(a)
	}
	if len(fresh) > 0 {
		r.t.Injections++
	}
	r.t.HumanSeen += len(u.Human)
	return r.checkpoint(ctx)
}

func (r *runner) setKnown(a Answer) {
	for i := range r.t.Known {
		if r.t.Known[i].Agent == a.Agent {
			r.t.Known[i] = a
			return
		}
	}
	r.t.Known = append(r.t.Known, a)
}

func copySeen(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

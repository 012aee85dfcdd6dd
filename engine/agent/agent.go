// Package agent is Conclave's one agent-step engine: it runs one agent for
// one durable step — model call, tools, a checkpoint after every model turn —
// and resumes from a checkpoint without repeating a model call that
// returned. A Policy supplies the tools and decides whether a reply ends the
// step: coordination and presentation (engine/round) and pipeline steps
// (engine/pipeline/runner) are policies over this same loop, and so is any
// later one. It knows nothing of Temporal or of where checkpoints are stored.
package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
)

// Policy supplies a step's tools and decides whether a model reply ends it.
// Its state S lives in the transcript, so a resumed step continues with the
// policy exactly where the checkpoint left it.
type Policy[S any] interface {
	// Tools are offered to the next model call; they may change with the
	// state (a vote's candidates grow with an injected answer). The files
	// are the step's workspace tools, for the policy to place among its own.
	Tools(t *Transcript[S], files Files) []tools.Spec
	// Handle answers the model's latest reply and may change t.State. An
	// error (such as exhausted enforcement) ends the step after the
	// answered turn is checkpointed.
	Handle(ctx context.Context, t *Transcript[S], reply llm.Message, files Files) (Turn, error)
	// SafePoint runs after a reply that did not end the step and before the
	// next model call (seed 003): messages it returns, such as an update
	// with injected answers, are appended and checkpointed.
	SafePoint(ctx context.Context, t *Transcript[S]) ([]llm.Message, error)
	// OutOfTurns is asked when the step has made all its model calls: nil
	// means the policy has put an outcome in t.State, an error fails the
	// step.
	OutOfTurns(t *Transcript[S]) error
	// Finished reports whether t.State holds the step's outcome; a finished
	// transcript is returned without another model call.
	Finished(t *Transcript[S]) bool
	// Check is asked about a stored transcript before it is resumed, as it
	// was read (its files not yet replayed): an error says why it cannot
	// be continued — a recorded outcome that breaks the rules it was made
	// under (a hand-edited checkpoint), or an attempt that failed for good
	// — and the step starts fresh instead (see resume).
	Check(t *Transcript[S]) error
}

// errorPrefix starts the tool message of an error result.
const errorPrefix = "Error: "

// limitNotice starts the message that tells a model its reply was stopped
// by a limit of the worker (llm.Limits).
const limitNotice = "Your previous reply was not received: "

// afterLimitNotice reports whether the model was just told that its reply
// went over a limit: a second such reply in a row ends the step.
func (r *run[S]) afterLimitNotice() bool {
	last := r.t.Messages[len(r.t.Messages)-1]
	return last.Role == llm.RoleUser && strings.HasPrefix(last.Content, limitNotice)
}

// Turn is how a policy answers one model reply.
type Turn struct {
	// Results answer the reply's tool calls one for one, in order; an error
	// result reaches the model prefixed with "Error: ".
	Results []tools.Result
	// After are messages appended after the tool results, such as a nudge
	// when the reply called no tool.
	After []llm.Message
	// Done ends the step; its outcome is in the transcript's state.
	Done bool
}

// Config is one step to run.
type Config[S any] struct {
	Model       llm.Model
	ModelName   string
	Temperature *float64
	MaxTokens   *int64
	// OnChunk is called for every streamed chunk, so a long generation can
	// heartbeat its activity.
	OnChunk func()
	// MaxTurns bounds the model calls of the step.
	MaxTurns int
	Files    Files
	// Tag, Binding, Messages and State start a fresh step: its launch, the
	// fingerprint of its inputs, its opening messages and the policy's
	// initial state. A stored checkpoint is resumed only with the same
	// Binding.
	Tag      string
	Binding  string
	Messages []llm.Message
	State    S
	// Prior is the stored checkpoint of the step, if any, to continue
	// instead when it may be (see resume). The workspace of the attempt
	// that wrote it is gone with its worker, so its answered file writes
	// are applied again first — also for a finished step, whose files are
	// about to be stored (again).
	Prior *Prior
	// Logf reports a checkpoint that is not resumed and why; nil discards.
	Logf func(format string, args ...any)
	// Checkpoint stores the whole transcript after every model turn,
	// before and after every Toolbox call, and on every change between
	// turns.
	Checkpoint func(ctx context.Context, t *Transcript[S]) error
	// CallScope names the step and its launch (session, agent, step,
	// launch) in the idempotency keys of its Toolbox calls (CallKey).
	CallScope string
}

// Run runs the step until the policy ends it. It returns the transcript,
// whose state holds the policy's outcome, or the policy's error, or the
// model's (classified) error, or the checkpoint's.
func Run[S any](ctx context.Context, cfg Config[S], p Policy[S]) (*Transcript[S], error) {
	if cfg.Model == nil {
		return nil, errors.New("agent: no model")
	}
	r := &run[S]{cfg: &cfg, p: p}
	if cfg.Prior != nil {
		t, err := resume(ctx, &cfg, p)
		if err != nil {
			return nil, err
		}
		r.t = t
	}
	if r.t != nil {
		r.replayWrites()
		if p.Finished(r.t) {
			return r.t, nil
		}
	} else {
		if len(cfg.Messages) == 0 {
			return nil, errors.New("agent: a fresh step needs its opening messages")
		}
		r.t = &Transcript[S]{Tag: cfg.Tag, Binding: cfg.Binding, Messages: cfg.Messages, State: cfg.State}
	}
	return r.t, r.loop(ctx)
}

type run[S any] struct {
	cfg *Config[S]
	p   Policy[S]
	t   *Transcript[S]
}

func (r *run[S]) loop(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if last := r.t.Messages[len(r.t.Messages)-1]; last.Role == llm.RoleAssistant {
			done, err := r.handle(ctx, last)
			if done || err != nil {
				return err
			}
			continue
		}
		if r.t.Turns >= r.cfg.MaxTurns {
			if err := r.p.OutOfTurns(r.t); err != nil {
				return err
			}
			return r.checkpoint(ctx)
		}
		resp, err := r.cfg.Model.Complete(ctx, llm.Request{
			Model: r.cfg.ModelName, Messages: r.t.Messages, Tools: llmTools(r.p.Tools(r.t, r.cfg.Files)),
			Temperature: r.cfg.Temperature, MaxTokens: r.cfg.MaxTokens, OnChunk: r.cfg.OnChunk,
		})
		if llm.IsReplyLimit(err) && !r.afterLimitNotice() {
			// Stopped for its size or time: the model is told once, and
			// fails the step if it does it again.
			r.t.Messages = append(r.t.Messages, llm.Message{Role: llm.RoleUser, Content: limitNotice + err.Error() +
				". Reply again, shorter: call one of your tools with arguments well under the limit."})
			r.t.Turns++
			if err := r.checkpoint(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		msg := resp.Message
		msg.Role = llm.RoleAssistant
		for i, c := range msg.ToolCalls {
			// Oversized arguments are never run and never kept: the next
			// request and the checkpoint hold a short placeholder instead.
			if len(c.Arguments) > tools.MaxCallBytes {
				msg.ToolCalls[i].Arguments = tools.Omit(c.Arguments)
			}
		}
		r.t.Messages = append(r.t.Messages, msg)
		r.t.Turns++
		r.t.Usage = r.t.Usage.Add(resp.Usage)
		if err := r.checkpoint(ctx); err != nil {
			return err
		}
	}
}

// handle answers the model's reply, checkpoints, and at a safe point lets
// the policy add what arrived meanwhile.
func (r *run[S]) handle(ctx context.Context, reply llm.Message) (done bool, err error) {
	files := r.cfg.Files
	files.durable = r.durableCall(len(r.t.Messages) - 1)
	turn, err := r.p.Handle(ctx, r.t, reply, files)
	if ctx.Err() != nil {
		// A call was cut off: its record says it started, and the retry
		// runs it again. Nothing of this turn is answered.
		return true, ctx.Err()
	}
	if len(turn.Results) != len(reply.ToolCalls) {
		return true, fmt.Errorf("agent: the policy answered %d of %d tool calls", len(turn.Results), len(reply.ToolCalls))
	}
	for i, c := range reply.ToolCalls {
		res := tools.Cap(turn.Results[i], tools.MaxResultBytes)
		content := Quote(res.Content) // tool output is untrusted
		if res.IsError {
			content = errorPrefix + content
		}
		r.t.Messages = append(r.t.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: content})
	}
	r.t.Messages = append(r.t.Messages, turn.After...)
	r.t.Calls = nil // answered: the results are in the conversation
	if err != nil {
		_ = r.checkpoint(ctx) // keep the failed transcript for the trace
		return true, err
	}
	if err := r.checkpoint(ctx); err != nil || turn.Done {
		return true, err
	}
	more, err := r.p.SafePoint(ctx, r.t)
	if err != nil || len(more) == 0 {
		return err != nil, err
	}
	r.t.Messages = append(r.t.Messages, more...)
	return false, r.checkpoint(ctx)
}

func (r *run[S]) checkpoint(ctx context.Context) error {
	if r.cfg.Checkpoint == nil {
		return nil
	}
	if err := r.cfg.Checkpoint(ctx, r.t); err != nil {
		return fmt.Errorf("checkpoint the transcript: %w", err)
	}
	return nil
}

// replayWrites rebuilds the workspace of a resumed step: it applies again
// every write_file call that was answered (a tool message follows it)
// without an error — a call the policy refused (say, after a round timeout)
// never ran — and that the step allows. An unanswered call is the loop's to
// handle.
func (r *run[S]) replayWrites() {
	msgs := r.t.Messages
	for i, m := range msgs {
		if m.Role != llm.RoleAssistant {
			continue
		}
		answered := map[string]bool{}
		for _, next := range msgs[i+1:] {
			if next.Role != llm.RoleTool {
				break
			}
			answered[next.ToolCallID] = !strings.HasPrefix(next.Content, errorPrefix)
		}
		for _, c := range m.ToolCalls {
			if _, omitted := tools.Omitted(c.Arguments); c.Name == tools.WriteFile && answered[c.ID] && !omitted && r.cfg.Files.Workspace != nil && r.cfg.Files.allows(c.Name) {
				r.cfg.Files.Workspace.Call(c.Name, c.Arguments)
			}
		}
	}
}

// llmTools is the one conversion of tool specs into the model's tool type.
func llmTools(specs []tools.Spec) []llm.Tool {
	out := make([]llm.Tool, len(specs))
	for i, s := range specs {
		out[i] = llm.Tool{Name: s.Name, Description: s.Description, Parameters: s.Parameters}
	}
	return out
}

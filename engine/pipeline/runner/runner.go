// Package runner is the pipeline step policy of the agent-step engine
// (engine/agent): one step of a pipeline with a model — the step's isolated
// context, its tools (the workspace tools it names plus jump_to_step,
// call_step and complete_step), its iteration limit. The engine's loop
// checkpoints the transcript after every model call, so a retried step
// resumes instead of paying for the same calls again. The graph and its
// state machine stay in the parent package; this one does I/O.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/engine/runes"
	"github.com/conclave-ai/conclave/engine/tools"
)

// DefaultMaxIterations is seed 002's default limit of model calls per step.
const DefaultMaxIterations = 50

// MaxUnknownToolReplies bounds the replies that call a tool the step does
// not offer: such a model rarely recovers, and would otherwise spend all of
// max_iterations. The step then fails (and on_failure applies), as a
// coordination step fails after max_enforcement_attempts.
const MaxUnknownToolReplies = 3

// MaxInvalidCallReplies bounds the replies in a row whose every call was a
// refused complete_step, jump_to_step or call_step (invalid arguments, a
// step it may not reach, evidence outside the workspace) and nothing else:
// the errors tell the model what to fix, and one that does not after this
// many tries would otherwise spend all of max_iterations.
const MaxInvalidCallReplies = 5

// Input is one step to run.
type Input struct {
	Graph pipeline.Graph
	Step  string
	// Title names the pipeline in the step's system message.
	Title string
	// Task is the run's input, the user's request.
	Task string
	// Context is the summary of the project context every step gets.
	Context  string
	Previous *pipeline.Previous
	// Workspace is the directory the step's file tools work in.
	Workspace string
	Model     llm.Model
	ModelName string
	// Temperature and MaxTokens are passed to every model call.
	Temperature *float64
	MaxTokens   *int64
	// Resume are the messages a caller comes back with from a call
	// (pipeline.ResumeMessages); nil starts the step fresh.
	Resume []llm.Message
	// Prior is the step's stored checkpoint when it is retried, resumed
	// when the agent-step engine's rule allows it (agent.Prior): a
	// finished one returns its outcome without a model call. Logf is told
	// when it is not resumed, and why.
	Prior      *agent.Prior
	Logf       func(format string, args ...any)
	Checkpoint func(context.Context, *Transcript) error
	OnChunk    func()
	// Tools are the step's MCP servers and command tool (nil: none);
	// CallScope names the step in their idempotency keys.
	Tools     agent.Toolbox
	CallScope string
}

// Transcript is a pipeline step's transcript: its conversation and the
// policy's State, stored as trace.jsonl like an agent step's.
type Transcript = agent.Transcript[State]

// State is what the pipeline step policy keeps in the transcript's state line.
type State struct {
	// Pending is the jump or call the model asked for; the step ends with it.
	Pending *pipeline.Request `json:"pending,omitempty"`
	Final   *Outcome          `json:"final,omitempty"`
	// UnknownTools counts replies that called a tool not offered.
	UnknownTools int `json:"unknown_tools,omitempty"`
	// InvalidCalls counts the replies in a row whose calls were all
	// refused step tools (MaxInvalidCallReplies).
	InvalidCalls int `json:"invalid_calls,omitempty"`
}

// Outcome is how the step ended. Evidence is seed 004's evidencePaths.
type Outcome struct {
	Status   pipeline.Status   `json:"status"`
	Summary  string            `json:"summary,omitempty"`
	Request  *pipeline.Request `json:"request,omitempty"`
	Evidence []string          `json:"evidencePaths,omitempty"`
	Error    string            `json:"error,omitempty"`
	Usage    coord.Usage       `json:"usage"`
	Turns    int               `json:"turns"`
}

// UnmarshalJSON also reads "evidence", the name checkpoints written before
// used, so a retried step resumes them with their evidence.
func (o *Outcome) UnmarshalJSON(data []byte) error {
	type plain Outcome
	var v struct {
		plain
		Legacy []string `json:"evidence"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*o = Outcome(v.plain)
	if o.Evidence == nil {
		o.Evidence = v.Legacy
	}
	return nil
}

// Run runs the step until it completes, fails, asks for a jump or a call,
// or reaches its iteration limit. Model and storage errors are returned
// as they are, for the caller to retry.
func Run(ctx context.Context, in Input) (*Outcome, *Transcript, error) {
	step, ok := in.Graph.Step(in.Step)
	if !ok {
		return nil, nil, fmt.Errorf("step %q is not in the pipeline", in.Step)
	}
	if in.Model == nil {
		return nil, nil, errors.New("runner: no model")
	}
	if in.Workspace == "" {
		return nil, nil, errors.New("runner: no workspace directory")
	}
	p := &policy{in: &in, step: step}
	cfg := agent.Config[State]{
		Model: in.Model, ModelName: in.ModelName, Temperature: in.Temperature, MaxTokens: in.MaxTokens,
		OnChunk: in.OnChunk, MaxTurns: p.maxIterations(), Prior: in.Prior, Logf: in.Logf, Checkpoint: in.Checkpoint,
		Files:     agent.Files{Workspace: &tools.Workspace{Dir: in.Workspace}, Allow: func(name string) bool { return slices.Contains(step.Tools, name) }, Tools: in.Tools},
		CallScope: in.CallScope,
	}
	// The opening messages are used unless the prior checkpoint is resumed.
	switch {
	case len(in.Resume) > 0:
		cfg.Messages = append([]llm.Message(nil), in.Resume...)
	default:
		cfg.Messages = FirstMessages(in, step)
	}
	t, err := agent.Run(ctx, cfg, p)
	if err != nil {
		return nil, t, err
	}
	return t.State.Final, t, nil
}

// policy is the pipeline step policy of the agent-step engine: workspace
// tools the step names, complete_step, jump_to_step and call_step to the
// step's destinations, and an answer without tool calls completes it.
type policy struct {
	in   *Input
	step pipeline.Step
}

func (p *policy) maxIterations() int {
	if p.step.MaxIterations > 0 {
		return p.step.MaxIterations
	}
	return DefaultMaxIterations
}

func (p *policy) Finished(t *Transcript) bool { return t.State.Final != nil }

// Check refuses to resume a checkpoint whose recorded jump, call or
// outcome breaks the rules it was made under: a request to a step this one
// may not reach, a status no step ends with, evidence outside the
// workspace. A hand-edited checkpoint thus cannot steer the run.
func (p *policy) Check(t *Transcript) error {
	s := t.State
	if s.Pending != nil {
		if err := p.checkRequest(s.Pending); err != nil {
			return err
		}
	}
	f := s.Final
	if f == nil {
		return nil
	}
	switch {
	case f.Status == pipeline.CallPending && (f.Request == nil || f.Request.Kind != pipeline.KindCall):
		return fmt.Errorf("its outcome %s names no call", f.Status)
	case f.Status == pipeline.Completed && f.Request != nil && f.Request.Kind != pipeline.KindJump:
		return fmt.Errorf("its outcome %s carries a %s", f.Status, f.Request.Kind)
	case (f.Status == pipeline.Failed || f.Status == pipeline.MaxIterations) && f.Request != nil:
		return fmt.Errorf("its outcome %s carries a %s", f.Status, f.Request.Kind)
	case f.Status != pipeline.Completed && f.Status != pipeline.CallPending && f.Status != pipeline.Failed && f.Status != pipeline.MaxIterations:
		return fmt.Errorf("its outcome has status %q, which a step does not end with", f.Status)
	}
	if f.Request != nil {
		if err := p.checkRequest(f.Request); err != nil {
			return err
		}
	}
	for _, e := range f.Evidence {
		if !insideWorkspace(e) {
			return fmt.Errorf("its evidence %q is not a path inside the workspace", e)
		}
	}
	return nil
}

func (p *policy) checkRequest(r *pipeline.Request) error {
	if r.Kind != pipeline.KindJump && r.Kind != pipeline.KindCall {
		return fmt.Errorf("it asks for a %q, which is neither a jump nor a call", r.Kind)
	}
	if !p.in.Graph.Allowed(p.step.Name, r.Target) {
		return fmt.Errorf("it asks to %s to %q, which is not a destination of step %q", r.Kind, r.Target, p.step.Name)
	}
	return nil
}

// insideWorkspace is the lexical rule for an evidence path: relative and
// not leaving the workspace.
func insideWorkspace(e string) bool {
	clean := path.Clean(e)
	return e != "" && !path.IsAbs(e) && clean != ".." && !strings.HasPrefix(clean, "../")
}

func (p *policy) SafePoint(context.Context, *Transcript) ([]llm.Message, error) { return nil, nil }

// OutOfTurns ends the step with status max_iterations.
func (p *policy) OutOfTurns(t *Transcript) error {
	t.State.Final = &Outcome{Status: pipeline.MaxIterations, Usage: t.Usage, Turns: t.Turns,
		Error: fmt.Sprintf("step %q made %d model calls without finishing (max_iterations %d)", p.step.Name, t.Turns, p.maxIterations())}
	return nil
}

func (p *policy) Tools(_ *Transcript, files agent.Files) []tools.Spec {
	return append(files.Specs(), pipeline.Specs(p.in.Graph, p.step.Name)...)
}

// Handle answers the tool calls of the model's latest message, in order,
// and decides whether the step is over. An answer without tool calls
// completes it.
func (p *policy) Handle(ctx context.Context, t *Transcript, msg llm.Message, files agent.Files) (agent.Turn, error) {
	var turn agent.Turn
	var done *pipeline.Completion
	unknown, refused := "", ""
	allRefused := len(msg.ToolCalls) > 0
	for _, c := range msg.ToolCalls {
		res, known := p.call(ctx, t, c, files, &done)
		if !known {
			unknown = c.Name
		}
		if isStepTool(c.Name) && res.IsError {
			refused = c.Name + ": " + res.Content
		} else {
			allRefused = false
		}
		turn.Results = append(turn.Results, res)
	}
	if unknown != "" {
		t.State.UnknownTools++
	}
	if allRefused {
		t.State.InvalidCalls++
	} else {
		t.State.InvalidCalls = 0
	}
	if len(msg.ToolCalls) == 0 && t.State.Pending == nil {
		// Seed 004's answer: only the result object, read as complete_step.
		c, ok, err := pipeline.ParseAnswer(msg.Content)
		if ok && err == nil {
			err = p.checkEvidence(c.Evidence)
		}
		if ok && err != nil {
			turn.After = append(turn.After, llm.Message{Role: llm.RoleUser, Content: err.Error() +
				" Answer again with a valid result, or call " + pipeline.ToolComplete + "."})
			return turn, nil
		}
		if ok {
			done = &c
			msg.Content = ""
		}
	}
	var out *Outcome
	switch {
	case t.State.InvalidCalls >= MaxInvalidCallReplies && done == nil && t.State.Pending == nil:
		last := runes.Clip(refused, 300)
		out = &Outcome{Status: pipeline.Failed, Error: fmt.Sprintf("step %q made %d replies in a row of refused step tool calls (last: %s)", p.step.Name, t.State.InvalidCalls, last)}
		out.Summary = "failed: " + out.Error
	case unknown != "" && t.State.UnknownTools >= MaxUnknownToolReplies && done == nil && t.State.Pending == nil:
		out = &Outcome{Status: pipeline.Failed, Error: fmt.Sprintf("step %q called tools it does not offer (last %q) in %d replies", p.step.Name, unknown, t.State.UnknownTools)}
		out.Summary = "failed: " + out.Error
	case len(msg.ToolCalls) == 0 && t.State.Pending == nil && done == nil:
		out = &Outcome{Status: pipeline.Completed, Summary: strings.TrimSpace(msg.Content)}
	case done != nil && done.Status == "fail":
		t.State.Pending = nil
		out = &Outcome{Status: pipeline.Failed, Summary: summaryOf(msg.Content, *done), Evidence: done.Evidence, Error: done.Error}
	case t.State.Pending != nil:
		out = p.transfer(t, msg.Content)
	case done != nil:
		out = &Outcome{Status: pipeline.Completed, Summary: summaryOf(msg.Content, *done), Evidence: done.Evidence}
	}
	if out != nil {
		out.Usage, out.Turns = t.Usage, t.Turns
		t.State.Final = out
		turn.Done = true
	}
	return turn, nil
}

// transfer ends the step for the jump or call it asked for: a call keeps
// the messages, which the caller saves for its return.
func (p *policy) transfer(t *Transcript, text string) *Outcome {
	r := *t.State.Pending
	out := &Outcome{Status: pipeline.Completed, Request: &r, Summary: strings.TrimSpace(text)}
	if r.Kind == pipeline.KindCall {
		out.Status = pipeline.CallPending
	}
	if out.Summary == "" {
		out.Summary = fmt.Sprintf("%s to step %s", r.Kind, r.Target)
	}
	return out
}

// call answers one tool call; known is false for a tool the step does not
// offer.
func (p *policy) call(ctx context.Context, t *Transcript, c llm.ToolCall, files agent.Files, done **pipeline.Completion) (res tools.Result, known bool) {
	g, from := p.in.Graph, p.step.Name
	if err := tools.CheckOmitted(c.Name, c.Arguments); err != nil {
		return tools.Result{Content: err.Error(), IsError: true}, true
	}
	switch c.Name {
	case pipeline.ToolComplete:
		comp, err := pipeline.ParseComplete(c.Arguments)
		if err == nil {
			err = p.checkEvidence(comp.Evidence)
		}
		if err != nil {
			return tools.Result{Content: err.Error(), IsError: true}, true
		}
		*done = &comp
		return tools.Result{Content: "Step finished with status " + comp.Status + "."}, true
	case pipeline.ToolJump, pipeline.ToolCall:
		target, err := pipeline.ParseTarget(g, from, c.Name, c.Arguments)
		if pending := t.State.Pending; err == nil && pending != nil {
			err = fmt.Errorf("%s: this step already asked to %s to %q; finish the step now", c.Name, pending.Kind, pending.Target)
		}
		if err != nil {
			return tools.Result{Content: err.Error(), IsError: true}, true
		}
		kind := pipeline.KindJump
		msg := "Step " + target + " runs next; this step ends now and does not resume."
		if c.Name == pipeline.ToolCall {
			kind = pipeline.KindCall
			msg = "Step " + target + " runs now; you will resume here with its result."
		}
		t.State.Pending = &pipeline.Request{Kind: kind, Target: target}
		return tools.Result{Content: msg}, true
	}
	if res, ok := files.Call(ctx, c); ok {
		return res, true
	}
	return tools.Result{Content: fmt.Sprintf("there is no tool %q in step %q; use only the tools offered", c.Name, from), IsError: true}, false
}

// checkEvidence refuses evidence that is not a file of the workspace, so
// result.json never lists a path nobody can open.
func (p *policy) checkEvidence(paths []string) error {
	for _, e := range paths {
		clean := path.Clean(e)
		if !insideWorkspace(e) {
			return fmt.Errorf("%s: evidencePaths %q must be a path inside the workspace", pipeline.ToolComplete, e)
		}
		root, err := os.OpenRoot(p.in.Workspace)
		if err != nil {
			return err
		}
		fi, err := root.Stat(clean)
		root.Close()
		if err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: evidencePaths %q is not a file in the workspace; write it first or leave it out", pipeline.ToolComplete, e)
		}
	}
	return nil
}

func summaryOf(text string, c pipeline.Completion) string {
	if s := strings.TrimSpace(text); s != "" {
		return s
	}
	if c.Status == "fail" {
		return "failed: " + c.Error
	}
	if len(c.Evidence) > 0 {
		return "passed; evidence: " + strings.Join(c.Evidence, ", ")
	}
	return "passed"
}

// isStepTool reports the pipeline's own tools (not the workspace's).
func isStepTool(name string) bool {
	return name == pipeline.ToolComplete || name == pipeline.ToolJump || name == pipeline.ToolCall
}

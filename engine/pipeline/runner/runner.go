// Package runner runs one step of a pipeline with a model: the step's
// isolated context, its tool loop (workspace tools plus jump_to_step,
// call_step and complete_step), its iteration limit, and a transcript that
// is checkpointed after every model call so a retried step resumes instead
// of paying for the same calls again. The graph and its state machine stay
// in the pure parent package; this one does I/O.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/engine/tools"
)

// DefaultMaxIterations is seed 002's default limit of model calls per step.
const DefaultMaxIterations = 50

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
	// Transcript is this attempt's checkpoint when the step is retried;
	// a finished one returns its outcome without a model call.
	Transcript *Transcript
	Checkpoint func(context.Context, *Transcript) error
	OnChunk    func()
}

// Transcript is the step's conversation plus what resuming it needs.
type Transcript struct {
	Messages []llm.Message     `json:"messages"`
	Turns    int               `json:"turns"`
	Usage    llm.Usage         `json:"usage"`
	Pending  *pipeline.Request `json:"pending,omitempty"`
	Final    *Outcome          `json:"final,omitempty"`
}

// Outcome is how the step ended.
type Outcome struct {
	Status   pipeline.Status   `json:"status"`
	Summary  string            `json:"summary,omitempty"`
	Request  *pipeline.Request `json:"request,omitempty"`
	Evidence []string          `json:"evidence,omitempty"`
	Error    string            `json:"error,omitempty"`
	Usage    llm.Usage         `json:"usage"`
	Turns    int               `json:"turns"`
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
	r := &run{in: &in, step: step, ws: tools.Workspace{Dir: in.Workspace}}
	switch {
	case in.Transcript != nil:
		r.t = in.Transcript
		r.replayWrites()
		if r.t.Final != nil {
			return r.t.Final, r.t, nil
		}
	case len(in.Resume) > 0:
		r.t = &Transcript{Messages: append([]llm.Message(nil), in.Resume...)}
	default:
		r.t = &Transcript{Messages: FirstMessages(in, step)}
	}
	out, err := r.loop(ctx)
	return out, r.t, err
}

type run struct {
	in   *Input
	step pipeline.Step
	ws   tools.Workspace
	t    *Transcript
}

func (r *run) maxIterations() int {
	if r.step.MaxIterations > 0 {
		return r.step.MaxIterations
	}
	return DefaultMaxIterations
}

func (r *run) loop(ctx context.Context) (*Outcome, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if last := r.t.Messages[len(r.t.Messages)-1]; last.Role == llm.RoleAssistant {
			if out := r.handle(last); out != nil {
				out.Usage, out.Turns = r.t.Usage, r.t.Turns
				r.t.Final = out
				return out, r.checkpoint(ctx)
			}
			if err := r.checkpoint(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if r.t.Turns >= r.maxIterations() {
			out := &Outcome{Status: pipeline.MaxIterations, Usage: r.t.Usage, Turns: r.t.Turns,
				Error: fmt.Sprintf("step %q made %d model calls without finishing (max_iterations %d)", r.step.Name, r.t.Turns, r.maxIterations())}
			r.t.Final = out
			return out, r.checkpoint(ctx)
		}
		resp, err := r.in.Model.Complete(ctx, llm.Request{
			Model: r.in.ModelName, Messages: r.t.Messages, Tools: r.tools(),
			Temperature: r.in.Temperature, MaxTokens: r.in.MaxTokens, OnChunk: r.in.OnChunk,
		})
		if err != nil {
			return nil, err
		}
		msg := resp.Message
		msg.Role = llm.RoleAssistant
		r.t.Messages = append(r.t.Messages, msg)
		r.t.Turns++
		r.t.Usage = r.t.Usage.Add(resp.Usage)
		if err := r.checkpoint(ctx); err != nil {
			return nil, err
		}
	}
}

func (r *run) checkpoint(ctx context.Context) error {
	if r.in.Checkpoint == nil {
		return nil
	}
	if err := r.in.Checkpoint(ctx, r.t); err != nil {
		return fmt.Errorf("checkpoint step %q: %w", r.step.Name, err)
	}
	return nil
}

func (r *run) tools() []llm.Tool {
	var specs []tools.Spec
	for _, s := range r.ws.Specs() {
		if contains(r.step.Tools, s.Name) {
			specs = append(specs, s)
		}
	}
	specs = append(specs, pipeline.Specs(r.in.Graph, r.step.Name)...)
	out := make([]llm.Tool, len(specs))
	for i, s := range specs {
		out[i] = llm.Tool{Name: s.Name, Description: s.Description, Parameters: s.Parameters}
	}
	return out
}

// handle answers the tool calls of the model's latest message and decides
// whether the step is over. An answer without tool calls completes it.
func (r *run) handle(msg llm.Message) *Outcome {
	if len(msg.ToolCalls) == 0 {
		if r.t.Pending != nil {
			return r.transfer(msg.Content)
		}
		return &Outcome{Status: pipeline.Completed, Summary: strings.TrimSpace(msg.Content)}
	}
	var done *pipeline.Completion
	for _, c := range msg.ToolCalls {
		res := r.call(c, &done)
		content := res.Content
		if res.IsError {
			content = "Error: " + content
		}
		r.t.Messages = append(r.t.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: content})
	}
	switch {
	case done != nil && done.Status == "fail":
		r.t.Pending = nil
		return &Outcome{Status: pipeline.Failed, Summary: summaryOf(msg.Content, *done), Evidence: done.Evidence, Error: done.Error}
	case r.t.Pending != nil:
		return r.transfer(msg.Content)
	case done != nil:
		return &Outcome{Status: pipeline.Completed, Summary: summaryOf(msg.Content, *done), Evidence: done.Evidence}
	}
	return nil
}

// transfer ends the step for the jump or call it asked for: a call keeps
// the messages, which the caller saves for its return.
func (r *run) transfer(text string) *Outcome {
	p := *r.t.Pending
	out := &Outcome{Status: pipeline.Completed, Request: &p, Summary: strings.TrimSpace(text)}
	if p.Kind == pipeline.KindCall {
		out.Status = pipeline.CallPending
	}
	if out.Summary == "" {
		out.Summary = fmt.Sprintf("%s to step %s", p.Kind, p.Target)
	}
	return out
}

func (r *run) call(c llm.ToolCall, done **pipeline.Completion) tools.Result {
	g, from := r.in.Graph, r.step.Name
	switch c.Name {
	case pipeline.ToolComplete:
		comp, err := pipeline.ParseComplete(c.Arguments)
		if err == nil {
			err = r.checkEvidence(comp.Evidence)
		}
		if err != nil {
			return tools.Result{Content: err.Error(), IsError: true}
		}
		*done = &comp
		return tools.Result{Content: "Step finished with status " + comp.Status + "."}
	case pipeline.ToolJump, pipeline.ToolCall:
		target, err := pipeline.ParseTarget(g, from, c.Name, c.Arguments)
		if err == nil && r.t.Pending != nil {
			err = fmt.Errorf("%s: this step already asked to %s to %q; finish the step now", c.Name, r.t.Pending.Kind, r.t.Pending.Target)
		}
		if err != nil {
			return tools.Result{Content: err.Error(), IsError: true}
		}
		kind := pipeline.KindJump
		msg := "Step " + target + " runs next; this step ends now and does not resume."
		if c.Name == pipeline.ToolCall {
			kind = pipeline.KindCall
			msg = "Step " + target + " runs now; you will resume here with its result."
		}
		r.t.Pending = &pipeline.Request{Kind: kind, Target: target}
		return tools.Result{Content: msg}
	}
	if !contains(r.step.Tools, c.Name) {
		return tools.Result{Content: fmt.Sprintf("there is no tool %q in step %q", c.Name, from), IsError: true}
	}
	res, _ := r.ws.Call(c.Name, c.Arguments)
	return res
}

// checkEvidence refuses evidence that is not a file of the workspace, so
// result.json never lists a path nobody can open.
func (r *run) checkEvidence(paths []string) error {
	for _, p := range paths {
		clean := path.Clean(p)
		if p == "" || path.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
			return fmt.Errorf("%s: evidence %q must be a path inside the workspace", pipeline.ToolComplete, p)
		}
		root, err := os.OpenRoot(r.in.Workspace)
		if err != nil {
			return err
		}
		fi, err := root.Stat(clean)
		root.Close()
		if err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: evidence %q is not a file in the workspace; write it first or leave it out", pipeline.ToolComplete, p)
		}
	}
	return nil
}

// replayWrites rebuilds the workspace of a resumed attempt: every write is
// in the transcript, and only answered calls count.
func (r *run) replayWrites() {
	answered := map[string]bool{}
	for _, m := range r.t.Messages {
		if m.Role == llm.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	for _, m := range r.t.Messages {
		for _, c := range m.ToolCalls {
			if c.Name == tools.WriteFile && answered[c.ID] && contains(r.step.Tools, c.Name) {
				r.ws.Call(c.Name, c.Arguments)
			}
		}
	}
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

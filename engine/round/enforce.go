package round

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
)

// toolSpecs lists the tools of the current call; the vote enum follows the
// answers the agent knows, so it refreshes after an injection.
func (r *runner) toolSpecs() []llm.Tool {
	specs := tools.WorkflowSpecs(toolMode[r.in.Mode], r.candidates())
	if r.in.Workspace != nil {
		specs = append(specs, r.in.Workspace.Specs()...)
	}
	out := make([]llm.Tool, len(specs))
	for i, s := range specs {
		out[i] = llm.Tool{Name: s.Name, Description: s.Description, Parameters: s.Parameters}
	}
	return out
}

var toolMode = map[Mode]tools.Mode{
	ModeVoting:        tools.ModeVoting,
	ModeVoteOnly:      tools.ModeVoteOnly,
	ModeDecomposition: tools.ModeDecomposition,
	ModePresent:       tools.ModeAnswerOnly,
}

// candidates are the anonymous ids that have an answer the agent has seen.
func (r *runner) candidates() []string {
	var c []string
	for _, k := range r.t.Known {
		c = append(c, r.anon[k.Agent])
	}
	sort.Strings(c)
	return c
}

// handle processes the model's last message: workspace tools run, a single
// valid workflow call ends the step, anything else costs an attempt and is
// answered with a message telling the model what to do.
func (r *runner) handle(ctx context.Context, msg llm.Message) (*Outcome, error) {
	if len(msg.ToolCalls) == 0 {
		r.t.Messages = append(r.t.Messages, llm.Message{Role: "user", Content: r.nudge()})
		return nil, r.fail(ctx, ReasonNoWorkflowTool)
	}
	var workflow []llm.ToolCall
	results := make([]string, len(msg.ToolCalls))
	for i, c := range msg.ToolCalls {
		if tools.IsWorkflowTool(c.Name) {
			workflow = append(workflow, c)
			continue
		}
		results[i] = r.runTool(c)
	}
	var out *Outcome
	reason, wfResult := "", ""
	switch {
	case len(workflow) == 0:
	case len(workflow) > 1:
		reason = ReasonMultipleActions
		if hasCall(workflow, "vote") && hasCall(workflow, "new_answer") {
			reason = ReasonMixedActions
		}
		wfResult = "Error: call exactly one workflow tool (new_answer, vote or stop) in a response, not several. Nothing was recorded; decide and call one."
	default:
		out, reason, wfResult = r.validate(workflow[0])
	}
	for i, c := range msg.ToolCalls {
		content := results[i]
		if tools.IsWorkflowTool(c.Name) {
			content = wfResult
		}
		r.t.Messages = append(r.t.Messages, llm.Message{Role: "tool", ToolCallID: c.ID, Name: c.Name, Content: content})
	}
	if reason != "" {
		return nil, r.fail(ctx, reason)
	}
	if out == nil {
		return nil, r.checkpoint(ctx)
	}
	out.SeenSteps = copySeen(r.t.SeenSteps)
	out.Usage = r.t.Usage
	out.Turns = r.t.Turns
	final := *out
	r.t.Final = &final
	out.Transcript = r.t
	return out, r.checkpoint(ctx)
}

func hasCall(calls []llm.ToolCall, name string) bool {
	for _, c := range calls {
		if c.Name == name {
			return true
		}
	}
	return false
}

func (r *runner) fail(ctx context.Context, reason string) error {
	r.t.Attempts++
	r.t.Reasons = append(r.t.Reasons, reason)
	if r.t.Attempts >= r.in.MaxAttempts {
		_ = r.checkpoint(ctx) // keep the failed transcript for the trace
		return &EnforcementError{Agent: r.in.Agent, Attempts: r.t.Attempts, Reasons: r.t.Reasons}
	}
	return r.checkpoint(ctx)
}

func (r *runner) nudge() string {
	switch r.in.Mode {
	case ModeVoteOnly:
		return "You did not call a workflow tool. Finish by calling `vote` with the agent_id of the best answer."
	case ModeDecomposition:
		return "You did not call a workflow tool. Finish by calling `new_answer` with your improved work, or `stop` when your part is done."
	case ModePresent:
		return "You did not call a workflow tool. Record the final answer by calling `new_answer`."
	}
	if len(r.t.Known) == 0 {
		return "You did not call a workflow tool. There are no answers yet: finish by calling `new_answer` with your answer."
	}
	return "You did not call a workflow tool. Finish by calling `vote` (if the best current answer is good enough) or `new_answer` (with a better answer)."
}

func (r *runner) runTool(c llm.ToolCall) string {
	if r.in.Workspace != nil {
		if res, ok := r.in.Workspace.Call(c.Name, c.Arguments); ok {
			if res.IsError {
				return "Error: " + res.Content
			}
			return res.Content
		}
	}
	return fmt.Sprintf("Error: there is no tool named %q here.", c.Name)
}

// validate checks one workflow call; a non-empty reason rejects it.
func (r *runner) validate(c llm.ToolCall) (out *Outcome, reason, result string) {
	offered := map[string]bool{}
	for _, t := range r.toolSpecs() {
		offered[t.Name] = true
	}
	switch {
	case c.Name == "new_answer" && r.in.Mode == ModeVoteOnly:
		return nil, ReasonAnswerLimit, "Error: you have reached the answer limit and can no longer submit new answers. Call `vote` instead."
	case c.Name == "vote" && len(r.t.Known) == 0 && r.in.Mode != ModeDecomposition:
		return nil, ReasonVoteWithoutAnswers, "Error: there are no answers to vote for yet. Call `new_answer` with your answer."
	case !offered[c.Name]:
		return nil, ReasonUnavailableTool, fmt.Sprintf("Error: `%s` is not available in this step. Available workflow tools: %s.", c.Name, r.workflowNames())
	}
	switch c.Name {
	case "new_answer":
		content, err := tools.ParseNewAnswer(c.Arguments)
		if err != nil {
			return nil, ReasonInvalidArguments, "Error: " + err.Error()
		}
		if r.in.Mode != ModePresent {
			for _, k := range r.t.Known {
				if strings.TrimSpace(k.Text) == strings.TrimSpace(content) {
					return nil, ReasonDuplicateAnswer, fmt.Sprintf("Error: this answer is identical to %s. If it is the best answer, vote for it; otherwise submit an improved answer.", k.Label)
				}
			}
		}
		return &Outcome{Action: coord.ActionNewAnswer, Answer: content}, "", "Answer recorded."
	case "vote":
		target, why, err := tools.ParseVote(c.Arguments)
		if err != nil {
			return nil, ReasonInvalidArguments, "Error: " + err.Error()
		}
		anon, err := coord.ParseTarget(target, len(r.real))
		real := r.real[anon]
		if err != nil || !r.knows(real) {
			return nil, ReasonUnknownVoteTarget, fmt.Sprintf("Error: vote target %q has no answer you have seen. Vote for one of: %s.", target, strings.Join(r.candidates(), ", "))
		}
		return &Outcome{Action: coord.ActionVote, Target: real, TargetLabel: target, Reason: why}, "", "Vote recorded."
	case "stop":
		summary, status, err := tools.ParseStop(c.Arguments)
		if err != nil {
			return nil, ReasonInvalidArguments, "Error: " + err.Error()
		}
		return &Outcome{Action: coord.ActionStop, Summary: summary, StopStatus: status}, "", "Stop recorded."
	}
	return nil, ReasonUnavailableTool, fmt.Sprintf("Error: unknown workflow tool %q.", c.Name)
}

func (r *runner) knows(agent string) bool {
	for _, k := range r.t.Known {
		if k.Agent == agent {
			return true
		}
	}
	return false
}

func (r *runner) workflowNames() string {
	var names []string
	for _, t := range r.toolSpecs() {
		if tools.IsWorkflowTool(t.Name) {
			names = append(names, t.Name)
		}
	}
	return strings.Join(names, ", ")
}

// replayWrites rebuilds the workspace of a resumed step by re-applying the
// write_file calls already answered in the transcript: the workspace of a
// crashed worker is gone, but every write is in the transcript.
func (r *runner) replayWrites() error {
	if r.in.Workspace == nil {
		return nil
	}
	msgs := r.t.Messages
	for i, m := range msgs {
		if m.Role != "assistant" || i == len(msgs)-1 {
			continue // the last one is handled by the loop itself
		}
		for _, c := range m.ToolCalls {
			if c.Name == "write_file" {
				r.in.Workspace.Call(c.Name, c.Arguments)
			}
		}
	}
	return nil
}

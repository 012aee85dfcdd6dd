package round

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
)

// Tools lists the tools of the next call; the vote enum follows the
// answers the agent knows, so it refreshes after an injection.
func (p *policy) Tools(t *Transcript, files agent.Files) []tools.Spec {
	specs := append(tools.WorkflowSpecs(p.in.Mode, candidates(p.anon, t.State.Known)), p.checklistTools(t)...)
	return append(specs, files.Specs()...)
}

// candidates are the anonymous ids that have an answer the agent has seen.
func candidates(anon map[string]string, known []Answer) []string {
	var c []string
	for _, k := range known {
		c = append(c, anon[k.Agent])
	}
	sort.Strings(c)
	return c
}

// Handle processes the model's reply: workspace tools run, a single valid
// workflow call ends the step, anything else costs an attempt and is
// answered with a message telling the model what to do.
func (p *policy) Handle(ctx context.Context, t *Transcript, msg llm.Message, files agent.Files) (agent.Turn, error) {
	var turn agent.Turn
	if len(msg.ToolCalls) == 0 {
		turn.After = []llm.Message{{Role: llm.RoleUser, Content: p.nudge(t)}}
		return turn, p.fail(t, ReasonNoWorkflowTool)
	}
	var workflow []llm.ToolCall
	var unknown []string
	invalidBefore := p.invalidChecklists(t)
	denied := 0
	hard := p.pastHardTimeout(t)
	turn.Results = make([]tools.Result, len(msg.ToolCalls))
	for i, c := range msg.ToolCalls {
		if tools.IsWorkflowTool(c.Name) {
			workflow = append(workflow, c)
			continue
		}
		// The checklist tools are how a gated agent reaches its vote, so
		// they stay allowed past the hard timeout (terminal progress).
		if res, ok := p.checklistCall(t, c); ok {
			turn.Results[i] = res
			continue
		}
		if hard {
			// The tool does not run; a resumed step does not replay it.
			denied++
			turn.Results[i] = refuse("the time for this round is over: only workflow tools (%s) are allowed now. `%s` was not run; finish with a workflow tool.", strings.Join(p.allowedAfterTimeout(t), ", "), c.Name)
			continue
		}
		res, ok := files.Call(ctx, c)
		if !ok {
			unknown = append(unknown, c.Name)
			res = tools.Result{Content: fmt.Sprintf("there is no tool named %q here; use only the tools offered in this step.", c.Name), IsError: true}
		}
		turn.Results[i] = res
	}
	var out *Outcome
	var reason string
	var wf tools.Result
	switch {
	case len(workflow) == 0:
	case len(workflow) > 1:
		reason = ReasonMultipleActions
		if hasCall(workflow, tools.Vote) && hasCall(workflow, tools.NewAnswer) {
			reason = ReasonMixedActions
		}
		wf = refuse("call exactly one workflow tool (new_answer, vote or stop) in a response, not several. Nothing was recorded; decide and call one.")
	default:
		out, reason, wf = p.validate(t, workflow[0], files)
	}
	var gateErr error
	if out != nil && out.Action == coord.ActionNewAnswer && p.in.Mode != coord.ModePresent && p.in.Gate != nil {
		refusal, err := p.in.Gate.AdmitAnswer(ctx, copySeen(t.State.SeenSteps))
		switch {
		case err != nil:
			// The step fails and is retried; its transcript then shows
			// this, and the model submits again.
			out, gateErr = nil, fmt.Errorf("check the answer of %s against the answer limits: %w", p.in.Agent, err)
			wf = refuse("the answer could not be checked against the answer limits (storage trouble) and was not recorded. Call `new_answer` again.")
		case refusal != "" && !slices.Contains(p.workflowNames(t), tools.Vote) && p.in.Mode != coord.ModeDecomposition:
			// Peers used up the limit while this step ran, and it cannot
			// vote (it has seen no answer: its first step). No action is
			// left to it, so its turn ends here, without counting against
			// the agent: the workflow relaunches it to vote.
			for i, c := range msg.ToolCalls {
				if tools.IsWorkflowTool(c.Name) {
					turn.Results[i] = refuse("the answer was not recorded: %s. This step ends; you will be shown the answers and asked to vote.", refusal)
				}
			}
			t.State.Reasons = append(t.State.Reasons, ReasonAnswerLimitNoVote)
			return turn, &EnforcementError{Agent: p.in.Agent, Attempts: t.State.Attempts, Reasons: t.State.Reasons}
		case refusal != "":
			out, reason = nil, ReasonAnswerLimit
			wf = refuse("the answer was not recorded: %s.", refusal)
		}
	}
	for i, c := range msg.ToolCalls {
		if tools.IsWorkflowTool(c.Name) {
			turn.Results[i] = wf
		}
	}
	if gateErr != nil {
		return turn, gateErr
	}
	if reason != "" {
		return turn, p.fail(t, reason)
	}
	if out == nil && denied > 0 {
		t.State.Denied += denied
		if t.State.Denied >= MaxDeniedAfterTimeout {
			t.State.Reasons = append(t.State.Reasons, ReasonRoundTimeout)
			return turn, &EnforcementError{Agent: p.in.Agent, Attempts: t.State.Attempts, Reasons: t.State.Reasons}
		}
		return turn, nil
	}
	if out == nil && p.invalidChecklists(t) > max(invalidBefore, freeInvalidChecklists) {
		// Refused checklists are free at first (the model fixes them), but a
		// model that keeps sending them would otherwise run to MaxTurns.
		return turn, p.fail(t, ReasonChecklistInvalid)
	}
	if out == nil && len(unknown) > 0 {
		// A tool that was not offered is as invalid as a missing workflow
		// call: without this, such a model would run until MaxTurns.
		return turn, p.fail(t, ReasonUnknownTool)
	}
	if out == nil {
		return turn, nil
	}
	out.SeenSteps = copySeen(t.State.SeenSteps)
	out.Usage = t.Usage
	out.Turns = t.Turns
	t.State.Final = out
	turn.Done = true
	return turn, nil
}

// workflowNames are the workflow tools offered in the step's next call.
func (p *policy) workflowNames(t *Transcript) []string {
	var names []string
	for _, s := range tools.WorkflowSpecs(p.in.Mode, candidates(p.anon, t.State.Known)) {
		names = append(names, s.Name)
	}
	return names
}

// allowedAfterTimeout names the tools that still run past the hard
// timeout: the workflow tools, and a gated agent's checklist tools.
func (p *policy) allowedAfterTimeout(t *Transcript) []string {
	names := p.workflowNames(t)
	for _, s := range p.checklistTools(t) {
		names = append(names, s.Name)
	}
	return names
}

func refuse(format string, args ...any) tools.Result {
	return tools.Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

func hasCall(calls []llm.ToolCall, name string) bool {
	for _, c := range calls {
		if c.Name == name {
			return true
		}
	}
	return false
}

// fail counts an enforcement attempt; the last one fails the step.
func (p *policy) fail(t *Transcript, reason string) error {
	t.State.Attempts++
	t.State.Reasons = append(t.State.Reasons, reason)
	if t.State.Attempts >= p.in.MaxAttempts {
		return &EnforcementError{Agent: p.in.Agent, Attempts: t.State.Attempts, Reasons: t.State.Reasons}
	}
	return nil
}

func (p *policy) nudge(t *Transcript) string {
	switch p.in.Mode {
	case coord.ModeVoteOnly:
		return "You did not call a workflow tool. Finish by calling `vote` with the agent_id of the best answer."
	case coord.ModeDecomposition:
		return "You did not call a workflow tool. Finish by calling `new_answer` with your improved work, or `stop` when your part is done."
	case coord.ModePresent:
		return "You did not call a workflow tool. Record the final answer by calling `new_answer`."
	}
	if len(t.State.Known) == 0 {
		return "You did not call a workflow tool. There are no answers yet: finish by calling `new_answer` with your answer."
	}
	return "You did not call a workflow tool. Finish by calling `vote` (if the best current answer is good enough) or `new_answer` (with a better answer)."
}

// validate checks one workflow call; a non-empty reason rejects it.
func (p *policy) validate(t *Transcript, c llm.ToolCall, files agent.Files) (out *Outcome, reason string, result tools.Result) {
	known := t.State.Known
	var workflow []string
	for _, s := range p.Tools(t, files) {
		if tools.IsWorkflowTool(s.Name) {
			workflow = append(workflow, s.Name)
		}
	}
	if reason, res := p.checklistGate(t, c.Name); reason != "" && slices.Contains(workflow, c.Name) {
		return nil, reason, res
	}
	switch {
	case c.Name == tools.NewAnswer && p.in.Mode == coord.ModeVoteOnly:
		return nil, ReasonAnswerLimit, refuse("you have reached the answer limit and can no longer submit new answers. Call `vote` instead.")
	case c.Name == tools.Vote && len(known) == 0 && p.in.Mode != coord.ModeDecomposition:
		return nil, ReasonVoteWithoutAnswers, refuse("there are no answers to vote for yet. Call `new_answer` with your answer.")
	case !slices.Contains(workflow, c.Name):
		return nil, ReasonUnavailableTool, refuse("`%s` is not available in this step. Available workflow tools: %s.", c.Name, strings.Join(workflow, ", "))
	}
	switch c.Name {
	case tools.NewAnswer:
		content, err := tools.ParseNewAnswer(c.Arguments)
		if err != nil {
			return nil, ReasonInvalidArguments, refuse("%s", err)
		}
		if p.in.Mode != coord.ModePresent {
			for _, k := range known {
				if strings.TrimSpace(k.Text) == strings.TrimSpace(content) {
					return nil, ReasonDuplicateAnswer, refuse("this answer is identical to %s. If it is the best answer, vote for it; otherwise submit an improved answer.", k.Label)
				}
				if o := WordOverlap(content, k.Text); p.in.MaxOverlap > 0 && o > p.in.MaxOverlap {
					return nil, ReasonNotNovel, refuse("this answer repeats %s: %.0f%% of its words are already there (at most %.0f%% is allowed). "+
						"If that answer is the best, vote for it; otherwise submit an answer that adds something new.", k.Label, 100*o, 100*p.in.MaxOverlap)
				}
			}
		}
		return &Outcome{Action: coord.ActionNewAnswer, Answer: content}, "", tools.Result{Content: "Answer recorded."}
	case tools.Vote:
		target, why, err := tools.ParseVote(c.Arguments)
		if err != nil {
			return nil, ReasonInvalidArguments, refuse("%s", err)
		}
		anon, err := coord.ParseTarget(target, len(p.real))
		real := p.real[anon]
		if err != nil || !knows(known, real) {
			return nil, ReasonUnknownVoteTarget, refuse("vote target %q has no answer you have seen. Vote for one of: %s.", target, strings.Join(candidates(p.anon, known), ", "))
		}
		if reason, res := p.checkVoteTarget(t, anon); reason != "" {
			return nil, reason, res
		}
		return &Outcome{Action: coord.ActionVote, Target: real, TargetLabel: target, Reason: why}, "", tools.Result{Content: "Vote recorded."}
	case tools.Stop:
		summary, status, err := tools.ParseStop(c.Arguments)
		if err != nil {
			return nil, ReasonInvalidArguments, refuse("%s", err)
		}
		return &Outcome{Action: coord.ActionStop, Summary: summary, StopStatus: status}, "", tools.Result{Content: "Stop recorded."}
	}
	return nil, ReasonUnavailableTool, refuse("unknown workflow tool %q.", c.Name)
}

func knows(known []Answer, agent string) bool {
	for _, k := range known {
		if k.Agent == agent {
			return true
		}
	}
	return false
}

// recheck validates a recorded action again as the workflow call that made
// it was validated: the same mode, the same answers known, the same limits.
func (p *policy) recheck(t *Transcript) error {
	f := t.State.Final
	var name string
	var args map[string]string
	switch f.Action {
	case coord.ActionNewAnswer:
		name, args = tools.NewAnswer, map[string]string{"content": f.Answer}
	case coord.ActionVote:
		name, args = tools.Vote, map[string]string{"agent_id": f.TargetLabel, "reason": f.Reason}
	case coord.ActionStop:
		name, args = tools.Stop, map[string]string{"summary": f.Summary, "status": f.StopStatus}
	default:
		return fmt.Errorf("its recorded action %q is not one of new_answer, vote, stop", f.Action)
	}
	data, err := json.Marshal(args)
	if err != nil {
		return err
	}
	out, reason, res := p.validate(t, llm.ToolCall{Name: name, Arguments: string(data)}, agent.Files{})
	switch {
	case reason != "":
		return fmt.Errorf("its recorded %s is invalid (%s: %s)", f.Action, reason, res.Content)
	case out.Target != f.Target:
		return fmt.Errorf("its recorded vote is for %q, but %q names %q", f.Target, f.TargetLabel, out.Target)
	case !maps.Equal(f.SeenSteps, t.State.SeenSteps):
		return fmt.Errorf("its recorded %s claims answers seen that the step did not see", f.Action)
	}
	return nil
}

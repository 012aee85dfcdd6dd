package round

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/checklist"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
)

// Checklist is seed 001's checklist policy (voting_sensitivity:
// checklist_gated) for one step: the agent reaches vote (or stop) only
// through an accepted submit_checklist with a terminal verdict, and
// new_answer only after an accepted iterate verdict and
// propose_improvements. Nil Input.Checklist leaves the step ungated.
type Checklist struct {
	Criteria []checklist.Criterion
	// FirstAnswer (checklist_first_answer) gates the agent's first answer
	// too; by default an agent without an answer answers freely.
	FirstAnswer bool
	// MaxCalls (max_checklist_calls_per_round) bounds accepted checklists
	// in the step (0: no bound); one more, a recheck, is allowed when
	// answers arrived after the last one.
	MaxCalls int
	// Plan is the round evaluator's valid task plan: the task-driven
	// branch, where the agent works the plan and submits new_answer
	// without a checklist.
	Plan []checklist.Task
	// Packet is the round evaluator's critique packet (markdown) when its
	// plan was missing or invalid: the degraded branch, where the packet
	// is the basis of the checklist. PacketPath is where the agent reads it.
	Packet, PacketPath string
}

// ChecklistState is the policy's part of the checkpoint, and what the step
// stores as checklist.json.
type ChecklistState struct {
	// Accepted counts accepted checklists; Invalid, validation errors.
	Accepted int `json:"accepted"`
	Invalid  int `json:"invalid"`
	Rechecks int `json:"rechecks"`
	// Last is the latest accepted result; Labels the answers it covered.
	Last   *checklist.Result `json:"last,omitempty"`
	Labels []string          `json:"labels,omitempty"`
	// Improvements are the plan proposed after Last's iterate verdict.
	Improvements []tools.Improvement `json:"improvements,omitempty"`
	// History is every result, accepted or not, in order.
	History []checklist.Result `json:"history"`
}

// Reason codes of the checklist gate.
const (
	ReasonChecklistRequired    = "checklist_required"
	ReasonImprovementsRequired = "improvements_required"
	ReasonTaskPlan             = "task_plan"
	ReasonChecklistInvalid     = "checklist_invalid"
)

// freeInvalidChecklists refused checklists cost a step nothing; each one
// after them costs an enforcement attempt.
const freeInvalidChecklists = 3

func (p *policy) invalidChecklists(t *Transcript) int {
	if t.State.Checklist == nil {
		return 0
	}
	return t.State.Checklist.Invalid
}

// gated reports whether the checklist gate applies to this step: it is
// on, the step can iterate (vote-only and presentation steps are not
// gated), and the agent has answered or checklist_first_answer is set.
func (p *policy) gated() bool {
	c := p.in.Checklist
	if c == nil || (p.in.Mode != coord.ModeVoting && p.in.Mode != coord.ModeDecomposition) {
		return false
	}
	return p.in.HasAnswered || c.FirstAnswer
}

// taskDriven is the evaluator's normal path: a valid plan to work from.
func (p *policy) taskDriven() bool { return p.gated() && len(p.in.Checklist.Plan) > 0 }

// labels are the answers a checklist scores: every answer the agent knows,
// in voting mode; none (flat scores of its own work) in decomposition.
func (p *policy) labels(t *Transcript) []string {
	if p.in.Mode == coord.ModeDecomposition {
		return nil
	}
	var out []string
	for _, k := range t.State.Known {
		out = append(out, k.Label)
	}
	slices.Sort(out)
	return out
}

// peerWindowOpen is whether peer answers may be injected now:
// defer_peer_updates_until_restart closes the window, except that
// allow_midstream_peer_updates_before_checklist_submit keeps it open in a
// gated step until its first accepted checklist (seed 001).
func (p *policy) peerWindowOpen(s *State) bool {
	if c := s.Checklist; p.gated() && c != nil && c.Accepted >= p.maxCalls() && c.Rechecks >= 1 {
		// The step can check no further answers: new ones would leave it
		// no legal action (no vote on unchecked answers, no checklist left).
		return false
	}
	if !p.in.DeferPeerUpdates {
		return true
	}
	return p.in.PeerUpdatesBeforeChecklist && p.gated() && (s.Checklist == nil || s.Checklist.Accepted == 0)
}

// checklistTools are offered after the workflow tools.
func (p *policy) checklistTools(t *Transcript) []tools.Spec {
	if !p.gated() || p.taskDriven() {
		return nil
	}
	specs := []tools.Spec{tools.ChecklistSpec(p.in.Checklist.Criteria, p.labels(t))}
	if s := t.State.Checklist; s != nil && s.Last != nil && s.Last.Verdict == checklist.VerdictIterate && len(s.Improvements) == 0 {
		specs = append(specs, tools.ProposeImprovementsSpec())
	}
	return specs
}

// checklistCall answers submit_checklist and propose_improvements; ok is
// false for any other tool.
func (p *policy) checklistCall(t *Transcript, c llm.ToolCall) (tools.Result, bool) {
	if c.Name != tools.SubmitChecklist && c.Name != tools.ProposeImprovements {
		return tools.Result{}, false
	}
	if !p.gated() {
		return tools.Result{}, false // not offered here: an unknown tool, which costs an attempt
	}
	if p.taskDriven() {
		return refuse("%s: you are working from the round evaluator's task plan: implement it and submit new_answer, without a checklist.", c.Name), true
	}
	if t.State.Checklist == nil {
		t.State.Checklist = &ChecklistState{History: []checklist.Result{}}
	}
	s := t.State.Checklist
	if c.Name == tools.ProposeImprovements {
		return p.propose(s, c.Arguments), true
	}
	labels := p.labels(t)
	recheck := s.Last != nil && !slices.Equal(labels, s.Labels)
	if s.Accepted >= p.maxCalls() && (!recheck || s.Rechecks >= 1) {
		return refuse("%s: you have used this round's checklist calls (%d). Act on your last verdict (%s): %s",
			c.Name, p.maxCalls(), s.Last.Verdict, s.Last.Next), true
	}
	req := checklist.Request{Criteria: p.in.Checklist.Criteria, Labels: labels, Decomposition: p.in.Mode == coord.ModeDecomposition}
	if recheck && s.Last != nil {
		req.Prior = s.Last.Scores // a delta recheck scores only the new labels
	}
	res := checklist.Evaluate(req, c.Arguments)
	if err := tools.CheckOmitted(c.Name, c.Arguments); err != nil {
		res = checklist.Invalid(req, err.Error()+"; score each label once with whole numbers, nothing more")
	}
	s.History = append(s.History, res)
	if res.Status != checklist.StatusAccepted {
		s.Invalid++
		return tools.Result{Content: res.JSON(), IsError: true}, true
	}
	if recheck && s.Accepted >= p.maxCalls() {
		s.Rechecks++
	}
	s.Accepted++
	s.Last, s.Labels, s.Improvements = &res, labels, nil
	return tools.Result{Content: res.JSON()}, true
}

// maxCalls is max_checklist_calls_per_round; 0 sets no bound.
func (p *policy) maxCalls() int {
	if n := p.in.Checklist.MaxCalls; n > 0 {
		return n
	}
	return math.MaxInt
}

// propose records the improvement plan after an iterate verdict; every
// failing criterion must be addressed.
func (p *policy) propose(s *ChecklistState, args string) tools.Result {
	if s.Last == nil || s.Last.Verdict != checklist.VerdictIterate {
		return refuse("%s is only valid after a submit_checklist result with verdict iterate; call submit_checklist first.", tools.ProposeImprovements)
	}
	ims, err := tools.ParseProposeImprovements(args)
	if err != nil {
		return refuse("%s", err)
	}
	covered := map[string]bool{}
	for _, im := range ims {
		covered[im.Criterion] = true
	}
	var missing []string
	for _, id := range s.Last.FailingCriteria {
		if !covered[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return refuse("%s: the plan does not address the failing criteria %s; include an improvement for each.", tools.ProposeImprovements, strings.Join(missing, ", "))
	}
	s.Improvements = ims
	return tools.Result{Content: "Plan recorded. Implement it, then submit the improved answer with new_answer."}
}

// checkVoteTarget refuses, in a gated voting step, a vote for another
// answer than the one the accepted checklist found best: the checklist
// justifies the vote, so the two must agree.
func (p *policy) checkVoteTarget(t *Transcript, anon string) (reason string, res tools.Result) {
	s := t.State.Checklist
	if !p.gated() || p.taskDriven() || s == nil || s.Last == nil || s.Last.Best == "" || anonOf(s.Last.Best) == anon {
		return "", tools.Result{}
	}
	return ReasonChecklistRequired, refuse("your checklist found %s best: vote for %s, or submit a checklist that justifies another vote.", s.Last.Best, anonOf(s.Last.Best))
}

// checklistGate refuses a workflow call the checklist does not allow yet;
// an empty reason lets it through.
func (p *policy) checklistGate(t *Transcript, name string) (reason string, res tools.Result) {
	if !p.gated() {
		return "", tools.Result{}
	}
	if p.taskDriven() {
		if name == tools.NewAnswer {
			return "", tools.Result{}
		}
		return ReasonTaskPlan, refuse("you are working from the round evaluator's task plan: implement the tasks and submit the result with new_answer.")
	}
	s := t.State.Checklist
	switch name {
	case tools.Vote, tools.Stop:
		switch {
		case s == nil || s.Last == nil:
			return ReasonChecklistRequired, refuse("call submit_checklist before you %s: score %s against the criteria.", name, p.scope(t))
		case s.Last.Verdict == checklist.VerdictIterate:
			return ReasonChecklistRequired, refuse("your checklist verdict is iterate (%s): call propose_improvements, implement it and submit new_answer.", strings.Join(s.Last.Failing, ", "))
		case !slices.Equal(p.labels(t), s.Labels) && (s.Accepted < p.maxCalls() || s.Rechecks < 1):
			return ReasonChecklistRequired, refuse("new answers arrived after your checklist (%s): call submit_checklist again, scoring at least the new ones.", strings.Join(newLabels(p.labels(t), s.Labels), ", "))
		}
	case tools.NewAnswer:
		switch {
		case s == nil || s.Last == nil:
			return ReasonChecklistRequired, refuse("call submit_checklist first: score %s against the criteria; its verdict says whether to improve.", p.scope(t))
		case s.Last.Verdict != checklist.VerdictIterate:
			return ReasonChecklistRequired, refuse("your checklist verdict is %s: %s", s.Last.Verdict, s.Last.Next)
		case len(s.Improvements) == 0:
			return ReasonImprovementsRequired, refuse("call propose_improvements with your plan for the failing criteria before new_answer.")
		}
	}
	return "", tools.Result{}
}

func (p *policy) scope(t *Transcript) string {
	if l := p.labels(t); len(l) > 0 {
		return strings.Join(l, ", ")
	}
	return "your current work"
}

func newLabels(now, then []string) []string {
	var out []string
	for _, l := range now {
		if !slices.Contains(then, l) {
			out = append(out, l)
		}
	}
	return out
}

// checklistContext is the user-message section of a gated step: the
// criteria with their ids, the rule, and the evaluator's handoff.
func checklistContext(in *Input) string {
	c := in.Checklist
	var b strings.Builder
	b.WriteString("\n<CHECKLIST CRITERIA>\n")
	for _, cr := range c.Criteria {
		fmt.Fprintf(&b, "%s: %s\n", cr.ID, agent.Quote(cr.Text))
	}
	b.WriteString("<END OF CHECKLIST CRITERIA>\n")
	switch {
	case len(c.Plan) > 0:
		b.WriteString("\nThe round evaluator reviewed every answer and committed the next round to this task plan. " +
			"Carry out the tasks in order (your own work: every task is inline here), verify the result, and submit it with new_answer. " +
			"Do not submit a checklist.\n<TASK PLAN>\n")
		for _, task := range c.Plan {
			fmt.Fprintf(&b, "- %s: %s", agent.Quote(task.ID), agent.Quote(firstNonEmpty(task.Title, task.Description)))
			if task.Description != "" && task.Title != "" {
				fmt.Fprintf(&b, " — %s", agent.Quote(task.Description))
			}
			if task.ImplementationGuidance != "" {
				fmt.Fprintf(&b, "\n  how: %s", agent.Quote(task.ImplementationGuidance))
			}
			b.WriteString("\n")
		}
		b.WriteString("<END OF TASK PLAN>\n")
	default:
		fmt.Fprintf(&b, "\nBefore you vote%s, call submit_checklist: score the answers against every criterion from %d to %d (%d or more passes). "+
			"Its verdict decides: vote or stop when the best passes every criterion, otherwise iterate: call propose_improvements, "+
			"implement the plan and submit new_answer.\n", map[bool]string{true: " or stop", false: ""}[in.Mode == coord.ModeDecomposition],
			checklist.MinScore, checklist.MaxScore, checklist.PassScore)
		if c.Packet != "" {
			fmt.Fprintf(&b, "The round evaluator's critique packet (%s) is the basis of your checklist; pass its path as report_path.\n<CRITIQUE PACKET>\n%s\n<END OF CRITIQUE PACKET>\n",
				agent.Quote(c.PacketPath), agent.Quote(c.Packet))
		}
	}
	return b.String()
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// checkChecklist validates a resumed checkpoint's checklist state: every
// accepted result must be what Evaluate would say of it, so a hand-edited
// verdict cannot open the gate.
func (p *policy) checkChecklist(t *Transcript) error {
	s := t.State.Checklist
	if s == nil || s.Last == nil {
		return nil
	}
	if s.Last.Status != checklist.StatusAccepted || !slices.Contains([]string{checklist.VerdictVote, checklist.VerdictStop, checklist.VerdictIterate}, s.Last.Verdict) {
		return fmt.Errorf("its checklist result is not an accepted verdict")
	}
	scores := s.Last.Scores
	payload := map[string]any{"scores": scores}
	if s.Last.Flat != nil {
		payload["scores"] = s.Last.Flat
	}
	req := checklist.Request{Criteria: p.in.Checklist.Criteria, Labels: s.Labels, Decomposition: p.in.Mode == coord.ModeDecomposition}
	again := checklist.Evaluate(req, mustJSON(payload))
	if again.Verdict != s.Last.Verdict || again.Best != s.Last.Best || !maps.EqualFunc(again.Scores, s.Last.Scores, maps.Equal) {
		return fmt.Errorf("its checklist verdict %q does not follow from its scores (%q)", s.Last.Verdict, again.Verdict)
	}
	if len(s.Improvements) > 0 {
		covered := map[string]bool{}
		for _, im := range s.Improvements {
			covered[im.Criterion] = true
		}
		for _, id := range again.FailingCriteria {
			if !covered[id] {
				return fmt.Errorf("its improvement plan does not address the failing criterion %s", id)
			}
		}
		if s.Last.Verdict != checklist.VerdictIterate {
			return fmt.Errorf("it has an improvement plan after a %s verdict", s.Last.Verdict)
		}
	}
	if s.Accepted < 1 || s.Accepted > len(s.History) || s.Rechecks > 1 {
		return fmt.Errorf("its checklist counters do not match its history")
	}
	return nil
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and ints always encode
	}
	return string(data)
}

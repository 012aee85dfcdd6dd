// Package evaluator is the round evaluator policy of the agent-step engine
// (engine/agent), seed 001's "Round Evaluator Normal Path": before round 2+,
// one fresh-eyes run reads every current answer and the agents' delivered
// workspaces (read-only) and hands the next round a critique packet
// (critique_packet.md) and a machine-readable task plan (next_tasks.json).
// It never votes, never submits a checklist and never proposes an answer:
// its one workflow tool is submit_evaluation.
package evaluator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/checklist"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/tools"
)

// ToolSubmit is the evaluator's one workflow tool.
const ToolSubmit = "submit_evaluation"

// Transformation pressures (round_evaluator_transformation_pressure).
const (
	PressureGentle     = "gentle"
	PressureBalanced   = "balanced"
	PressureAggressive = "aggressive"
)

const (
	defaultMaxAttempts = 3
	defaultMaxTurns    = 30
)

// Input is one evaluator run.
type Input struct {
	Task     string
	Round    int // the round the packet prepares (2, 3, …)
	Criteria []checklist.Criterion
	Answers  []round.Answer // Label and Text are read
	Pressure string         // empty: balanced
	// Workspace holds the agents' delivered workspaces under peers/agentN/;
	// the evaluator may only list and read them.
	Workspace *tools.Workspace

	Model       llm.Model
	ModelName   string
	Temperature *float64
	MaxTokens   *int64
	MaxAttempts int // invalid submissions before the run fails; default 3
	MaxTurns    int // model calls; default 30

	Tag, Binding string
	Prior        *agent.Prior
	Logf         func(format string, args ...any)
	Checkpoint   func(context.Context, *Transcript) error
	OnChunk      func()
}

// Transcript is an evaluator run's transcript, stored as trace.jsonl.
type Transcript = agent.Transcript[State]

// State is what the policy keeps in the checkpoint.
type State struct {
	Attempts int      `json:"attempts"`
	Reasons  []string `json:"reasons,omitempty"`
	Final    *Outcome `json:"final,omitempty"`
}

// Outcome is the evaluator's handoff. NextTasks is the raw JSON the
// evaluator gave (nil when it gave none); NextTasksError says why it is not
// a valid next_tasks.json, which sends the next round down the degraded
// path (the packet as the basis of a checklist).
type Outcome struct {
	Packet         checklist.Packet `json:"packet"`
	NextTasks      json.RawMessage  `json:"next_tasks,omitempty"`
	NextTasksError string           `json:"next_tasks_error,omitempty"`
	Usage          coord.Usage      `json:"usage"`
	Turns          int              `json:"turns"`
}

// Error is an evaluator run that produced no usable packet.
type Error struct {
	Attempts int
	Reasons  []string
}

func (e *Error) Error() string {
	return fmt.Sprintf("the round evaluator produced no valid critique packet in %d attempts (%s)", e.Attempts, strings.Join(e.Reasons, "; "))
}

// Run runs the evaluator until it submits a valid packet.
func Run(ctx context.Context, in Input) (*Outcome, *Transcript, error) {
	if in.Model == nil {
		return nil, nil, errors.New("evaluator: no model")
	}
	if strings.TrimSpace(in.Task) == "" || len(in.Answers) == 0 {
		return nil, nil, errors.New("evaluator: a task and at least one answer are needed")
	}
	if in.MaxAttempts <= 0 {
		in.MaxAttempts = defaultMaxAttempts
	}
	if in.MaxTurns <= 0 {
		in.MaxTurns = defaultMaxTurns
	}
	p := &policy{in: &in}
	cfg := agent.Config[State]{
		Model: in.Model, ModelName: in.ModelName, Temperature: in.Temperature, MaxTokens: in.MaxTokens,
		OnChunk: in.OnChunk, MaxTurns: in.MaxTurns, Tag: in.Tag, Binding: in.Binding, Prior: in.Prior,
		Logf: in.Logf, Checkpoint: in.Checkpoint,
		Files: agent.Files{Workspace: in.Workspace, Allow: func(name string) bool { return name != tools.WriteFile }},
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: SystemMessage(in.Pressure)},
			{Role: llm.RoleUser, Content: userMessage(&in)},
		},
	}
	t, err := agent.Run(ctx, cfg, p)
	if err != nil {
		return nil, t, err
	}
	return t.State.Final, t, nil
}

type policy struct{ in *Input }

func (p *policy) Tools(_ *Transcript, files agent.Files) []tools.Spec {
	return append(files.Specs(), SubmitSpec())
}

func (p *policy) Finished(t *Transcript) bool { return t.State.Final != nil }

// Check validates a stored outcome again, so a hand-edited checkpoint
// cannot hand the next round a packet that breaks the contract.
func (p *policy) Check(t *Transcript) error {
	if f := t.State.Final; f != nil {
		return checklist.CheckPacket(f.Packet)
	}
	if t.State.Attempts >= p.in.MaxAttempts {
		return fmt.Errorf("the attempt it records failed for good (%d invalid submissions)", t.State.Attempts)
	}
	return nil
}

func (p *policy) SafePoint(context.Context, *Transcript) ([]llm.Message, error) { return nil, nil }

func (p *policy) OutOfTurns(t *Transcript) error {
	return &Error{Attempts: t.State.Attempts, Reasons: append(t.State.Reasons, fmt.Sprintf("used all %d model turns", t.Turns))}
}

// Handle runs the read-only workspace tools and accepts one valid
// submit_evaluation; anything else is answered with what to do, and an
// invalid submission costs an attempt.
func (p *policy) Handle(ctx context.Context, t *Transcript, msg llm.Message, files agent.Files) (agent.Turn, error) {
	var turn agent.Turn
	if len(msg.ToolCalls) == 0 {
		turn.After = []llm.Message{{Role: llm.RoleUser, Content: "You did not call a tool. Finish by calling `" + ToolSubmit + "` with the critique packet and next_tasks."}}
		return turn, p.fail(t, "no submit_evaluation call")
	}
	var reason string
	for _, c := range msg.ToolCalls {
		if c.Name != ToolSubmit {
			res, ok := files.Call(ctx, c)
			if !ok {
				res = tools.Result{Content: fmt.Sprintf("there is no tool %q for the evaluator: it reads files and calls %s; it never votes, submits a checklist or answers", c.Name, ToolSubmit), IsError: true}
				reason = "called " + c.Name
			}
			turn.Results = append(turn.Results, res)
			continue
		}
		if t.State.Final != nil {
			turn.Results = append(turn.Results, tools.Result{Content: "the evaluation is already recorded", IsError: true})
			continue
		}
		out, err := parseSubmission(c.Arguments)
		if err != nil {
			turn.Results = append(turn.Results, tools.Result{Content: err.Error(), IsError: true})
			reason = err.Error()
			continue
		}
		res := "Evaluation recorded."
		if out.NextTasksError != "" {
			res += " " + out.NextTasksError + "; the agents will work from the critique packet instead."
		}
		out.Usage, out.Turns = t.Usage, t.Turns
		t.State.Final = out
		turn.Results = append(turn.Results, tools.Result{Content: res})
	}
	if t.State.Final != nil {
		turn.Done = true
		return turn, nil
	}
	if reason != "" {
		return turn, p.fail(t, reason)
	}
	return turn, nil
}

func (p *policy) fail(t *Transcript, reason string) error {
	t.State.Attempts++
	t.State.Reasons = append(t.State.Reasons, reason)
	if t.State.Attempts >= p.in.MaxAttempts {
		return &Error{Attempts: t.State.Attempts, Reasons: t.State.Reasons}
	}
	return nil
}

// parseSubmission reads submit_evaluation's arguments: the packet must be
// complete; next_tasks is taken as given and judged (a malformed one is
// kept for the record and reported, not refused: the degraded path).
func parseSubmission(args string) (*Outcome, error) {
	if err := tools.CheckOmitted(ToolSubmit, args); err != nil {
		return nil, err
	}
	var in struct {
		Packet    checklist.Packet `json:"critique_packet"`
		NextTasks json.RawMessage  `json:"next_tasks"`
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return nil, fmt.Errorf("%s: the arguments must be an object with \"critique_packet\" (an object of the sections %s) and \"next_tasks\": %v",
			ToolSubmit, sectionKeys(), err)
	}
	if err := checklist.CheckPacket(in.Packet); err != nil {
		return nil, fmt.Errorf("%s: %v; call %s again with every section", ToolSubmit, err, ToolSubmit)
	}
	out := &Outcome{Packet: in.Packet}
	if raw := strings.TrimSpace(string(in.NextTasks)); raw != "" && raw != "null" {
		out.NextTasks = in.NextTasks
		if _, err := checklist.ParseNextTasks(in.NextTasks); err != nil {
			out.NextTasksError = err.Error()
		}
	} else {
		out.NextTasksError = "next_tasks.json is missing"
	}
	return out, nil
}

func sectionKeys() string {
	keys := make([]string, len(checklist.PacketSections))
	for i, s := range checklist.PacketSections {
		keys[i] = s.Key
	}
	return strings.Join(keys, ", ")
}

// SubmitSpec is the submit_evaluation tool.
func SubmitSpec() tools.Spec {
	sections := map[string]any{}
	var required []string
	for _, s := range checklist.PacketSections {
		sections[s.Key] = map[string]any{"type": "string", "description": s.Title}
		required = append(required, s.Key)
	}
	return tools.Spec{
		Name: ToolSubmit,
		Description: "Record your evaluation: the critique packet (every section) and next_tasks, the one committed " +
			"plan for the next round. This ends your run.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"critique_packet": map[string]any{"type": "object", "properties": sections, "required": required, "additionalProperties": false},
				"next_tasks": map[string]any{"type": "object", "description": "next_tasks.json: {\"objective\", \"tasks\": [{\"id\", \"title\", \"description\", " +
					"\"execution\": {\"mode\": \"inline\"|\"delegate\"}, \"implementation_guidance\"}], \"approach_assessment\": {\"ceiling_status\": " +
					"\"ceiling_not_reached\"|\"ceiling_approaching\"|\"ceiling_reached\", \"evolution_tasks\": [...], \"breakthroughs\": [...]}}"},
			},
			"required":             []string{"critique_packet", "next_tasks"},
			"additionalProperties": false,
		},
	}
}

// SystemMessage is the evaluator's brief, shaped by the transformation
// pressure (seed 001, "Transformation Pressure").
func SystemMessage(pressure string) string {
	var b strings.Builder
	b.WriteString("You are the round evaluator: a fresh pair of eyes between rounds of a multi-agent session. " +
		"Read the ORIGINAL MESSAGE, the evaluation criteria and every CURRENT ANSWER (and the files delivered with them, " +
		"read-only under peers/<agent>/). Do not vote, score a checklist or write an answer: diagnose, then hand the next " +
		"round one committed thesis.\n\n" +
		"Write the critique packet: criteria interpretation, criterion findings, cross-answer synthesis, what to preserve, " +
		"an improvement spec, a verification plan and the evidence gaps. Then write next_tasks: concrete tasks with " +
		"implementation_guidance that says HOW (techniques, patterns, and why the previous attempt likely failed), and an " +
		"approach_assessment whose ceiling_status says whether the approach itself is the limit; at ceiling_reached, " +
		"evolution_tasks propose a fundamentally different strategy rather than more fixes. Name breakthroughs to spread, " +
		"not only keep. Conclave agents carry out every task themselves: prefer execution mode inline.\n\n")
	switch pressure {
	case PressureGentle:
		b.WriteString("Transformation pressure: gentle. Exploit the current thesis; prefer corrective work unless there is strong evidence of a ceiling.")
	case PressureAggressive:
		b.WriteString("Transformation pressure: aggressive. Treat the task as frontier-seeking: push for a transformative shift as soon as rounds stop producing step-change improvement, grounded in evidence.")
	default:
		b.WriteString("Transformation pressure: balanced. Allow bigger restructuring once the current line of improvement starts plateauing.")
	}
	b.WriteString(" Correctness comes first, and the handoff is one plan, never a menu of incompatible strategies.")
	return b.String()
}

func userMessage(in *Input) string {
	var b strings.Builder
	b.WriteString("<ORIGINAL MESSAGE>\n")
	b.WriteString(agent.Quote(in.Task))
	b.WriteString("\n<END OF ORIGINAL MESSAGE>\n\n")
	b.WriteString(round.AnswersBlock(in.Answers))
	b.WriteString("\n<EVALUATION CRITERIA>\n")
	for _, c := range in.Criteria {
		fmt.Fprintf(&b, "- %s: %s\n", c.ID, agent.Quote(c.Text))
	}
	fmt.Fprintf(&b, "<END OF EVALUATION CRITERIA>\n\nPrepare round %d.\n", in.Round)
	return b.String()
}

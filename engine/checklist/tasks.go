package checklist

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Execution modes of a next-round task (seed 001: canonical execution
// metadata). Conclave has no specialised subagents, so the parent carries
// out delegate tasks itself; the hint is kept for the record.
const (
	ExecInline   = "inline"
	ExecDelegate = "delegate"
)

// Ceiling statuses of the evaluator's approach assessment.
const (
	CeilingNotReached   = "ceiling_not_reached"
	CeilingApproaching  = "ceiling_approaching"
	CeilingReached      = "ceiling_reached"
	maxTasks            = 50
	maxTaskFieldBytes   = 16 << 10
	maxNextTasksPayload = 256 << 10
)

// NextTasks is next_tasks.json, the evaluator's machine-readable handoff:
// one committed next-round thesis as tasks the parent executes before its
// next new_answer.
type NextTasks struct {
	Objective          string             `json:"objective"`
	Tasks              []Task             `json:"tasks"`
	ApproachAssessment ApproachAssessment `json:"approach_assessment"`
}

// Task is one unit of next-round work.
type Task struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Execution   struct {
		Mode string `json:"mode"`
	} `json:"execution"`
	// ImplementationGuidance says HOW: techniques, patterns, and why the
	// previous attempt likely failed (seed 001: implementation ceilings).
	ImplementationGuidance string   `json:"implementation_guidance"`
	Criteria               []string `json:"criteria,omitempty"`
}

// ApproachAssessment is whether the approach itself has a ceiling; at
// ceiling_reached, evolution_tasks propose a different strategy.
type ApproachAssessment struct {
	CeilingStatus  string         `json:"ceiling_status"`
	EvolutionTasks []Task         `json:"evolution_tasks,omitempty"`
	Breakthroughs  []Breakthrough `json:"breakthroughs,omitempty"`
	ParadigmShift  *struct {
		Limitation  string `json:"limitation"`
		Alternative string `json:"alternative"`
		CarryOver   string `json:"carry_over"`
	} `json:"paradigm_shift,omitempty"`
}

// Breakthrough is an element to amplify across the answer, not only keep.
type Breakthrough struct {
	Element string `json:"element"`
	Why     string `json:"why"`
	ApplyTo string `json:"apply_to"`
}

// ParseNextTasks reads and validates next_tasks.json. A nil error means the
// parent may work from it (the normal path); any error sends the parent to
// the degraded path, where critique_packet.md is the basis of its
// checklist. The error lists every problem, for the operator.
func ParseNextTasks(data []byte) (*NextTasks, error) {
	if len(data) == 0 {
		return nil, errors.New("next_tasks.json is empty")
	}
	if len(data) > maxNextTasksPayload {
		return nil, fmt.Errorf("next_tasks.json is %d bytes, at most %d", len(data), maxNextTasksPayload)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var nt NextTasks
	if err := dec.Decode(&nt); err != nil {
		return nil, fmt.Errorf("next_tasks.json is not valid: %w", err)
	}
	if dec.More() {
		return nil, errors.New("next_tasks.json is not valid: data after the JSON object")
	}
	var problems []string
	if len(nt.Tasks) == 0 && len(nt.ApproachAssessment.EvolutionTasks) == 0 {
		problems = append(problems, "it has no tasks and no evolution_tasks")
	}
	if len(nt.Tasks)+len(nt.ApproachAssessment.EvolutionTasks) > maxTasks {
		problems = append(problems, fmt.Sprintf("it has more than %d tasks", maxTasks))
	}
	seen := map[string]bool{}
	check := func(where string, tasks []Task) {
		for i, t := range tasks {
			at := fmt.Sprintf("%s[%d]", where, i)
			id := strings.TrimSpace(t.ID)
			switch {
			case id == "":
				problems = append(problems, at+": no id")
			case seen[id]:
				problems = append(problems, fmt.Sprintf("%s: id %q is used twice", at, t.ID))
			}
			seen[id] = true
			if strings.TrimSpace(t.Title) == "" && strings.TrimSpace(t.Description) == "" {
				problems = append(problems, at+": no title or description")
			}
			if t.Execution.Mode != ExecInline && t.Execution.Mode != ExecDelegate {
				problems = append(problems, fmt.Sprintf("%s: execution.mode %q is not %q or %q", at, t.Execution.Mode, ExecInline, ExecDelegate))
			}
			for _, f := range []string{t.Title, t.Description, t.ImplementationGuidance} {
				if len(f) > maxTaskFieldBytes {
					problems = append(problems, fmt.Sprintf("%s: a field is over %d bytes", at, maxTaskFieldBytes))
				}
			}
		}
	}
	check("tasks", nt.Tasks)
	check("approach_assessment.evolution_tasks", nt.ApproachAssessment.EvolutionTasks)
	switch cs := nt.ApproachAssessment.CeilingStatus; cs {
	case CeilingNotReached, CeilingApproaching:
	case CeilingReached:
		if len(nt.ApproachAssessment.EvolutionTasks) == 0 {
			problems = append(problems, "ceiling_reached needs evolution_tasks: a different strategy, not more fixes")
		}
	default:
		problems = append(problems, fmt.Sprintf("approach_assessment.ceiling_status %q is not one of %s, %s, %s",
			cs, CeilingNotReached, CeilingApproaching, CeilingReached))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("next_tasks.json is not valid: %s", strings.Join(problems, "; "))
	}
	return &nt, nil
}

// Plan is the task plan the parent works from: the tasks to carry out, in
// order (evolution tasks first when the approach hit its ceiling).
func (nt *NextTasks) Plan() []Task {
	if nt.ApproachAssessment.CeilingStatus == CeilingReached {
		return append(append([]Task{}, nt.ApproachAssessment.EvolutionTasks...), nt.Tasks...)
	}
	return append(append([]Task{}, nt.Tasks...), nt.ApproachAssessment.EvolutionTasks...)
}

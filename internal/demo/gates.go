package demo

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

// doneMark is what the offline model's task-driven answers carry: an
// evaluator that finds it in every answer has nothing more to ask.
const doneMark = "[T1 done: added a concrete example]"

var criterionRe = regexp.MustCompile(`(?m)^(E\d+): `)

// gatesReply plays the quality gates of checklist_gated sessions: the
// round evaluator (a plan while an answer lacks the example, then no tasks,
// which sends the agents to their checklists), the task-driven answer, and
// the checklist before a vote.
func gatesReply(r llmtest.Request, text string, answers map[string]string, labels []string) (llmtest.Reply, bool) {
	switch {
	case r.HasTool("submit_evaluation"):
		return evaluation(answers), true
	case strings.Contains(r.Messages[1].Content, "<TASK PLAN>") && r.HasTool("new_answer") && len(answers) > 0:
		best := bestAnswer(answers)
		return call("new_answer", map[string]string{"content": strings.TrimSuffix(answers[best], " "+doneMark) + " " + doneMark}), true
	case r.HasTool("submit_checklist") && !strings.Contains(r.Last().Content, `"status":"accepted"`):
		return checklist(text, answers, labels), true
	}
	return llmtest.Reply{}, false
}

func evaluation(answers map[string]string) llmtest.Reply {
	packet := map[string]string{
		"criteria_interpretation": "The task asks for a short, correct, complete answer.",
		"criterion_findings":      "The answers state the goal and the key facts; none shows a worked example.",
		"cross_answer_synthesis":  "The longest answer covers the most; the others add nothing it lacks.",
		"preserve":                "The structure: goal, key facts, next step.",
		"improvement_spec":        "Add one concrete example that a reader can follow.",
		"verification_plan":       "Check that the example matches the facts stated.",
		"evidence_gaps":           "None for a text answer.",
	}
	tasks := map[string]any{"tasks": []any{}, "approach_assessment": map[string]any{"ceiling_status": "ceiling_not_reached"}}
	for _, a := range answers {
		if !strings.Contains(a, doneMark) {
			tasks = map[string]any{
				"objective": "Make the best answer concrete.",
				"tasks": []any{map[string]any{"id": "T1", "title": "Add a concrete example", "execution": map[string]any{"mode": "inline"},
					"implementation_guidance": "Take the best answer and add one worked example after the key facts."}},
				"approach_assessment": map[string]any{"ceiling_status": "ceiling_not_reached"},
			}
			break
		}
	}
	args, _ := json.Marshal(map[string]any{"critique_packet": packet, "next_tasks": tasks})
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_demo", Name: "submit_evaluation", Arguments: string(args)}}}
}

// checklist scores the best (longest) answer 9 on every criterion and the
// others 6, so every offline agent reaches the same verdict.
func checklist(text string, answers map[string]string, labels []string) llmtest.Reply {
	var ids []string
	for _, m := range criterionRe.FindAllStringSubmatch(text, -1) {
		ids = append(ids, m[1])
	}
	sort.Strings(ids)
	ids = compact(ids)
	best := ""
	if len(answers) > 0 {
		best = bestAnswer(answers)
	}
	scores := map[string]map[string]int{}
	for _, l := range labels {
		s := map[string]int{}
		for _, id := range ids {
			s[id] = 6
			if strings.HasPrefix(l, best+".") {
				s[id] = 9
			}
		}
		scores[l] = s
	}
	args, _ := json.Marshal(map[string]any{"scores": scores})
	return llmtest.Reply{Text: fmt.Sprintf("Scored %d answers.", len(labels)),
		ToolCalls: []llmtest.ToolCall{{ID: "call_demo", Name: "submit_checklist", Arguments: string(args)}}}
}

func compact(s []string) []string {
	var out []string
	for _, v := range s {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

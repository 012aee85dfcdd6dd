package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/engine/tools"
)

// Tool names a pipeline step offers besides its own tools.
const (
	ToolJump     = "jump_to_step"
	ToolCall     = "call_step"
	ToolComplete = "complete_step"
)

// Specs are the step-jump tools of a step: jump and call only when the step
// has destinations (the enum lists them), complete_step always.
func Specs(g Graph, step string) []tools.Spec {
	var specs []tools.Spec
	if s, ok := g.Step(step); ok && len(s.Destinations) > 0 {
		target := map[string]any{"type": "string", "enum": s.Destinations, "description": "the step to go to"}
		specs = append(specs,
			tools.Spec{Name: ToolJump, Description: "Hand over to another step for good: this step ends and does not resume.",
				Parameters: schema(map[string]any{"step": target}, "step")},
			tools.Spec{Name: ToolCall, Description: "Run another step and come back: this step pauses, keeps its messages, and resumes with the called step's result.",
				Parameters: schema(map[string]any{"step": target}, "step")})
	}
	specs = append(specs, tools.Spec{Name: ToolComplete, Description: "Finish this step: status pass or fail, evidencePaths (the paths of files that prove it, not their content), and the error when it failed.",
		Parameters: schema(map[string]any{
			"status":        map[string]any{"type": "string", "enum": []string{"pass", "fail"}},
			"evidencePaths": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"error":         map[string]any{"type": "string"},
		}, "status")})
	return specs
}

func schema(props map[string]any, required ...string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// ParseTarget reads jump_to_step / call_step arguments; a destination the
// step may not use is an error for the model naming the allowed ones.
func ParseTarget(g Graph, from, tool, args string) (string, error) {
	var a struct {
		Step string `json:"step"`
	}
	if err := strict(args, &a); err != nil {
		return "", fmt.Errorf("%s: %v; call it again with {\"step\": \"<name>\"}", tool, err)
	}
	if err := checkDestination(g, tool, from, a.Step); err != nil {
		return "", err
	}
	return a.Step, nil
}

// checkDestination is the StepJumpController's rule, worded for the model:
// it names the destinations it may use instead.
func checkDestination(g Graph, tool, from, to string) error {
	if g.Allowed(from, to) {
		return nil
	}
	s, _ := g.Step(from)
	if len(s.Destinations) == 0 {
		return fmt.Errorf("%s: step %q cannot go to other steps; finish with complete_step", tool, from)
	}
	return fmt.Errorf("%s: %q is not a destination of step %q; use one of: %s", tool, to, from, strings.Join(s.Destinations, ", "))
}

// Completion is what complete_step reports, and what a step agent may
// answer instead as a JSON object (seed 004's { status, evidencePaths,
// error }).
type Completion struct {
	Status   string   `json:"status"` // pass or fail
	Evidence []string `json:"evidencePaths,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// completionArgs also reads "evidence", the name complete_step had before.
type completionArgs struct {
	Status   string   `json:"status"`
	Evidence []string `json:"evidencePaths"`
	Legacy   []string `json:"evidence"`
	Error    *string  `json:"error"`
}

// ParseComplete reads complete_step arguments.
func ParseComplete(args string) (Completion, error) {
	var a completionArgs
	if err := strict(args, &a); err != nil {
		return Completion{}, fmt.Errorf("%s: %v; call it again with {\"status\": \"pass\"|\"fail\", \"evidencePaths\": [paths], \"error\": \"…\"}", ToolComplete, err)
	}
	return a.completion(ToolComplete)
}

func (a completionArgs) completion(what string) (Completion, error) {
	c := Completion{Status: a.Status, Evidence: a.Evidence}
	if c.Evidence == nil {
		c.Evidence = a.Legacy
	}
	if a.Error != nil {
		c.Error = *a.Error
	}
	if c.Status != "pass" && c.Status != "fail" {
		return c, fmt.Errorf("%s: status %q must be pass or fail", what, c.Status)
	}
	if c.Status == "fail" && strings.TrimSpace(c.Error) == "" {
		return c, fmt.Errorf("%s: a failed step needs an error saying what went wrong", what)
	}
	return c, nil
}

// ParseAnswer reads an answer without tool calls that is seed 004's result
// object, {"status": "pass"|"fail", "evidencePaths": [...], "error": null|"…"},
// alone or in a ```json fence. ok is false for any other answer (prose),
// which completes the step as it is; err says what is wrong with an
// answer that is such an object but not a valid one.
func ParseAnswer(text string) (c Completion, ok bool, err error) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "```") && strings.HasSuffix(t, "```") && len(t) >= 6 {
		t = strings.TrimSpace(strings.TrimSuffix(t[3:], "```"))
		t = strings.TrimSpace(strings.TrimPrefix(t, "json"))
	}
	if !strings.HasPrefix(t, "{") || !strings.HasSuffix(t, "}") {
		return c, false, nil
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &probe) != nil {
		return c, false, nil
	}
	if _, ok := probe["status"]; !ok {
		return c, false, nil
	}
	var a completionArgs
	if err := strict(t, &a); err != nil {
		return c, true, fmt.Errorf("your answer is not a valid step result: %v; answer with only {\"status\": \"pass\"|\"fail\", \"evidencePaths\": [paths], \"error\": null|\"…\"}", err)
	}
	c, err = a.completion("your answer")
	return c, true, err
}

func strict(args string, v any) error {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the arguments are not valid (%v)", err)
	}
	if dec.More() {
		return fmt.Errorf("unexpected text after the arguments")
	}
	return nil
}

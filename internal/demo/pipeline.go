package demo

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/engine/pipeline/runner"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

// pipelineReply plays a pipeline step: write a short note on what the step
// asked (when the step may write files), then complete_step with the note
// as evidence. A request to summarise the project context gets its opening
// as the app type.
func pipelineReply(r llmtest.Request) (llmtest.Reply, bool) {
	if len(r.Messages) > 0 && r.Messages[0].Content == runner.SummaryInstruction {
		words := strings.Fields(r.Last().Content)
		if len(words) > 30 {
			words = append(words[:30], "…")
		}
		return llmtest.Reply{Text: "App type: " + strings.Join(words, " ") + " (offline demo model)\nBase URL: unknown\nCredentials: unknown\nStack: unknown"}, true
	}
	if !r.HasTool("complete_step") {
		return llmtest.Reply{}, false
	}
	step, prompt, tools := currentStep(r)
	note := "notes/" + step + ".md"
	if tools == 0 && r.HasTool("write_file") {
		content := fmt.Sprintf("# %s\n\nWhat this step asked:\n\n%s\n\nDone by the offline demo model.\n", step, prompt)
		return call("write_file", map[string]string{"path": note, "content": content}), true
	}
	args := map[string]any{"status": "pass"}
	text := fmt.Sprintf("Step %s done.", step)
	if r.HasTool("write_file") {
		args["evidencePaths"] = []string{note}
		text = fmt.Sprintf("Step %s done; notes in %s.", step, note)
	}
	data, _ := json.Marshal(args)
	return llmtest.Reply{Text: text,
		ToolCalls: []llmtest.ToolCall{{ID: "call_demo", Name: "complete_step", Arguments: string(data)}}}, true
}

// currentStep finds the step being worked on, the first line of its prompt
// and how many tool results it has had.
func currentStep(r llmtest.Request) (step, prompt string, tools int) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role == "tool" {
			tools++
			continue
		}
		if m.Role == "user" && strings.HasPrefix(m.Content, "# Step: ") {
			lines := strings.Split(m.Content, "\n")
			step = strings.Fields(strings.TrimPrefix(lines[0], "# Step: "))[0]
			if len(lines) > 2 {
				prompt = lines[2]
			}
			return step, prompt, tools
		}
	}
	return "step", "", tools
}

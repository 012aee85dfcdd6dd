package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/pipeline"
)

// FirstMessages are a fresh step's isolated context (seed 004): what the
// step must do, a summary of the project context, the previous step's
// status and the run's input — nothing of earlier steps' conversations.
// The project context, the previous step's summary (model output) and the
// run's input are untrusted and go through agent.Quote.
func FirstMessages(in Input, step pipeline.Step) []llm.Message {
	prev := in.Previous
	if prev != nil {
		quoted := *prev
		quoted.Summary = agent.Quote(prev.Summary)
		prev = &quoted
	}
	return []llm.Message{
		{Role: llm.RoleSystem, Content: systemMessage(in, step)},
		{Role: llm.RoleUser, Content: pipeline.StepMessage(step, agent.Quote(in.Context), prev, agent.Quote(in.Task))},
	}
}

func systemMessage(in Input, step pipeline.Step) string {
	var b strings.Builder
	b.WriteString("You carry out one step of a pipeline")
	if in.Title != "" {
		fmt.Fprintf(&b, " (%s)", in.Title)
	}
	b.WriteString(". Do only this step's work. ")
	if len(step.Tools) > 0 {
		fmt.Fprintf(&b, "Files shared by all steps are in your workspace; use %s. ", strings.Join(step.Tools, ", "))
	}
	if len(step.Destinations) > 0 {
		fmt.Fprintf(&b, "You may hand over to another step with jump_to_step, or run one and come back with call_step: %s. ", strings.Join(step.Destinations, ", "))
	}
	b.WriteString("When the step is done, call complete_step with status pass or fail, the paths of files that prove it, " +
		"and the error when it failed; or answer without a tool call, and your answer is the step's result. Keep the result short.")
	return b.String()
}

// ContextVerbatimBytes is the size up to which the project context goes to
// every step as it is; a longer one is summarised once per run.
const ContextVerbatimBytes = 4000

// SummarizeContext returns the project context every step is given: the
// text itself when short, else the model's summary of it (one call, made
// once per run so every step sees the same summary).
func SummarizeContext(ctx context.Context, model llm.Model, modelName, text string) (string, llm.Usage, error) {
	text = strings.TrimSpace(text)
	if len(text) <= ContextVerbatimBytes {
		return text, llm.Usage{}, nil
	}
	resp, err := model.Complete(ctx, llm.Request{Model: modelName, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "Summarise project documents for engineers who will each do one step of the project. " +
			"Keep every requirement, name, number and constraint; drop repetition and prose. At most 400 words."},
		{Role: llm.RoleUser, Content: text},
	}})
	if err != nil {
		return "", llm.Usage{}, fmt.Errorf("summarise the project context: %w", err)
	}
	summary := strings.TrimSpace(resp.Message.Content)
	if summary == "" {
		return "", resp.Usage, fmt.Errorf("summarise the project context: the model returned an empty summary")
	}
	return summary, resp.Usage, nil
}

package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/pipeline"
)

// FirstMessages are a fresh step's isolated context (seed 004): what the
// step must do, the summary of the project context, the previous step's id
// and pass/fail, and the run's input — nothing of earlier steps'
// conversations, results or evidence. The project context and the run's
// input are untrusted and go through agent.Quote.
func FirstMessages(in Input, step pipeline.Step) []llm.Message {
	return []llm.Message{
		{Role: llm.RoleSystem, Content: systemMessage(in, step)},
		{Role: llm.RoleUser, Content: pipeline.StepMessage(step, agent.Quote(in.Context), in.Previous, agent.Quote(in.Task))},
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
	b.WriteString("When the step is done, call complete_step with status pass or fail, evidencePaths (the paths of files that prove it, not their content) " +
		"and the error when it failed; or answer with only the JSON object {\"status\": \"pass\"|\"fail\", \"evidencePaths\": [paths], \"error\": null|\"message\"}. " +
		"An answer without a tool call that is not that object passes the step and is its result. Keep the result short.")
	return b.String()
}

// SummarizeContext is the project summary of a run (seed 004's PRD
// summary), made once by InitPipeline: pipeline.SummarizeProject's
// extraction, and — only when the document names neither an app type nor
// a stack and is longer than the overview keeps, and a model is given —
// one model call that writes those keys, read by the same extraction. The
// summary is bounded whatever the model answers. model is asked for the
// model only when it is called; nil means there is none.
func SummarizeContext(ctx context.Context, model func() (llm.Model, string, error), text string) (pipeline.ProjectSummary, coord.Usage, error) {
	s := pipeline.SummarizeProject(text)
	if s.AppType != "" || s.Stack != "" || len(strings.TrimSpace(text)) <= pipeline.MaxProjectOverviewBytes || model == nil {
		return s, coord.Usage{}, nil
	}
	chat, modelName, err := model()
	if err != nil {
		return s, coord.Usage{}, err
	}
	resp, err := chat.Complete(ctx, llm.Request{Model: modelName, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: SummaryInstruction},
		{Role: llm.RoleUser, Content: text},
	}})
	if err != nil {
		return s, coord.Usage{}, fmt.Errorf("summarise the project context: %w", err)
	}
	m := pipeline.SummarizeProject(resp.Message.Content)
	if m.AppType == "" && m.Stack == "" {
		return s, resp.Usage, nil // the extraction's overview is as good
	}
	m.Project, m.Overview = s.Project, ""
	if m.BaseURL == "" {
		m.BaseURL = s.BaseURL
	}
	if m.Credentials == "" {
		m.Credentials = s.Credentials
	}
	return m, resp.Usage, nil
}

// SummaryInstruction is the system message of the one summarising call.
const SummaryInstruction = "Summarise a project document for engineers and testers who will each do one step of the project. " +
	"Answer with exactly these four lines, each at most 40 words, \"unknown\" when the document does not say:\n" +
	"App type: <what kind of application it is>\nBase URL: <the URL the application runs at>\n" +
	"Credentials: <test accounts, usernames and passwords the document gives>\nStack: <languages, frameworks, services>"

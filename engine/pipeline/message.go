package pipeline

import "strings"

// Previous is what a step is told about the step before it.
type Previous struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Summary string `json:"summary,omitempty"`
}

// StepMessage is the user message that opens a step in its isolated
// context (seed 004): what the step must do, the summary of the project
// context, the previous step's status and the run's input — nothing of
// earlier steps' conversations. A coordination step gives it to its agents
// as their task.
func StepMessage(step Step, context string, prev *Previous, task string) string {
	// Plain concatenation: fmt's writers count as I/O to workflowcheck.
	title := step.Name
	if step.Title != "" {
		title += " — " + step.Title
	}
	msg := "# Step: " + title + "\n\n" + strings.TrimSpace(step.Prompt) + "\n"
	if c := strings.TrimSpace(context); c != "" {
		msg += "\n## Project context (summary)\n\n" + c + "\n"
	}
	if prev != nil {
		msg += "\n## Previous step\n\n" + prev.Name + ": " + prev.Status
		if s := strings.TrimSpace(prev.Summary); s != "" {
			msg += " — " + s
		}
		msg += "\n"
	}
	if t := strings.TrimSpace(task); t != "" {
		msg += "\n## Input\n\n" + t + "\n"
	}
	return msg
}

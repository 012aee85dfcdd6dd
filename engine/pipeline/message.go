package pipeline

import "strings"

// Previous is what a step is told about the step before it (seed 004):
// its name and whether it passed — never its error, summary or evidence,
// which are model output and stay out of the next step's context.
type Previous struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// PassFail is a step status as the next step is told it: pass when the
// step completed or handed over with a call, fail otherwise. "pass" and
// "fail" stay as they are.
func PassFail(status string) string {
	switch Status(status) {
	case Completed, CallPending, "pass":
		return "pass"
	}
	return "fail"
}

// StepMessage is the user message that opens a step in its isolated
// context (seed 004): what the step must do, the summary of the project
// context, the previous step's id and pass/fail and the run's input —
// nothing of earlier steps' conversations, results or evidence. A
// coordination step gives it to its agents as their task. The project
// context is untrusted text from the project document: every line of it
// is quoted ("> "), so it cannot open a section of its own.
func StepMessage(step Step, context string, prev *Previous, task string) string {
	// Plain concatenation: fmt's writers count as I/O to workflowcheck.
	title := step.Name
	if step.Title != "" {
		title += " — " + step.Title
	}
	msg := "# Step: " + title + "\n\n" + strings.TrimSpace(step.Prompt) + "\n"
	if c := strings.TrimSpace(context); c != "" {
		msg += "\n## Project context (summary)\n\n"
		for _, line := range strings.Split(c, "\n") {
			msg += strings.TrimRight("> "+strings.TrimSpace(line), " ") + "\n"
		}
	}
	msg += "\n## Previous step\n\n"
	if prev == nil {
		msg += "Status: first step\n"
	} else {
		msg += "Step: " + prev.Name + "\nStatus: " + PassFail(prev.Status) + "\n"
	}
	if t := strings.TrimSpace(task); t != "" {
		msg += "\n## Input\n\n" + t + "\n"
	}
	return msg
}

package contract

import (
	"encoding/json"
	"fmt"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/runes"
)

// Limits on what enters workflow history. Whole texts stay in storage; the
// history keeps previews cut the same way everywhere.
const (
	// PreviewChars bounds answer, reason and summary previews (bytes, cut
	// at a rune boundary).
	PreviewChars = 280
	// MaxFinalAnswerBytes bounds the final answer that Present returns and
	// CoordinationResult carries; a longer one is a preview and the whole
	// text is in final/answer.json.
	MaxFinalAnswerBytes = 64 << 10
	// MaxSummaryBytes bounds a pipeline step's summary in history; the
	// whole summary is in the step's output.json.
	MaxSummaryBytes = 4 << 10
	// MaxHumanInputBytes bounds one human_input update; it goes into every
	// later agent context.
	MaxHumanInputBytes = 8 << 10
	// MaxHumanInputs bounds the human inputs of one session: each is stored
	// in history and shown to every later step, so an unbounded stream of
	// them (a loop calling `conclave say`) would grow the history toward
	// Temporal's limit and every context with it.
	MaxHumanInputs = 100
	// MaxSessionIDBytes bounds a session or run id, which names a storage
	// folder.
	MaxSessionIDBytes = 200
)

// Limits on what a coordination session may start with (docs/temporal.md,
// "Limits"). The start input carries the task once and InitSession's input
// once more; with them under these bounds both payloads stay below
// Temporal's 2 MiB payload limit, and the steps carry only references.
const (
	// MaxTaskBytes bounds the task.
	MaxTaskBytes = 1536 << 10
	// MaxConfigBytes bounds the JSON of the config and criteria together.
	MaxConfigBytes = config.MaxConfigJSONBytes
	// MaxAgents bounds the team (config.MaxAgents).
	MaxAgents = config.MaxAgents
)

// Limits on what a pipeline run may start with. The start input carries the
// project document and the input once, InitPipeline's input once more; steps
// get the document's bounded summary but every step's input carries the
// input, so it is bounded harder.
const (
	// MaxPipelineContextBytes bounds the project document (`context:`,
	// a scenario's prd.md). With the input and the graph, the start input
	// stays under the SDK's 512 KiB payload warning.
	MaxPipelineContextBytes = 256 << 10
	// MaxPipelineInputBytes bounds a run's input.
	MaxPipelineInputBytes = 64 << 10
	// MaxPipelineStepsBytes bounds what max_steps steps may put in the
	// history (a pipeline run does not continue as new): each step's input
	// carries the input, its own step definition and the project summary,
	// and a few events around it. Half of Temporal's 50 MiB history limit
	// leaves room for everything else.
	MaxPipelineStepsBytes = 25 << 20
	// pipelineStepOverhead is a step's history besides its input's
	// variable parts: the summary, the result and the events.
	pipelineStepOverhead = 8 << 10
)

// PipelineSizeProblems names what of a pipeline run's start is over its
// limit, in words a user can act on; none when it fits. The CLI checks it
// before it starts a run, the workflow again for starts from elsewhere.
func PipelineSizeProblems(def PipelineDefinition, input string) []string {
	var problems []string
	if n := len(def.Context); n > MaxPipelineContextBytes {
		problems = append(problems, fmt.Sprintf("definition.context: the project document is %s; at most %s is allowed "+
			"(it travels whole in the run's start input, and steps get only its summary): shorten it, or keep details in files the steps read",
			sizeOf(n), sizeOf(MaxPipelineContextBytes)))
	}
	if n := len(input); n > MaxPipelineInputBytes {
		problems = append(problems, fmt.Sprintf("input: %s; at most %s is allowed (every step's input carries it): "+
			"put long material in the project document or in files the steps read", sizeOf(n), sizeOf(MaxPipelineInputBytes)))
	}
	largest := 0
	for _, s := range def.Graph.Steps {
		// A step's JSON (its team config's maps sorted by encoding/json)
		// is the same on every replay.
		//workflowcheck:ignore
		if data, err := json.Marshal(s); err == nil {
			largest = max(largest, len(data))
		}
	}
	if steps := def.Graph.MaxStepsOf(); steps*(len(input)+largest+pipelineStepOverhead) > MaxPipelineStepsBytes {
		problems = append(problems, fmt.Sprintf("definition.graph.max_steps: %d steps, each carrying the %s input and a step of up to %s, "+
			"could outgrow Temporal's 50 MiB history limit (a run's steps may use %s); lower max_steps or shorten the input and the prompts",
			steps, sizeOf(len(input)), sizeOf(largest), sizeOf(MaxPipelineStepsBytes)))
	}
	return problems
}

// sizeOf is n bytes for people: "3145728 bytes (3.0 MiB)".
func sizeOf(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d bytes (%.1f KiB)", n, float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Preview shortens text for workflow history and the Web UI.
func Preview(s string) string {
	p, cut := runes.Truncate(s, PreviewChars)
	if cut {
		return p + "…"
	}
	return p
}

// ValidSessionID reports whether id can name a session's (or a pipeline
// run's) storage folder: one plain path element of 1-200 letters, digits,
// '.', '_' or '-', not "." or "..". Keys built on it can never leave the
// storage root. The workflow checks it before anything runs and the
// activities check it again, by this one rule, so an id the workflow
// accepted is never refused by storage.
func ValidSessionID(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > MaxSessionIDBytes {
		return false
	}
	for _, r := range id {
		ok := r == '.' || r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// SessionIDRule is the rule of ValidSessionID in words, for error messages.
const SessionIDRule = "use 1-200 letters, digits, '.', '_' or '-' (not . or ..)"

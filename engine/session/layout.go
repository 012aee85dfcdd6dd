// Package session maps Conclave's session layout (ARCHITECTURE.md, seed 000)
// onto a storage.Store: it loads a snapshot of every agent's answers and votes
// and saves one step's outputs. The same layout serves step mode, where an
// external orchestrator drives agents through a directory, and Temporal, where
// the workflow assigns step numbers and activities write the files.
package session

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// File names of the layout. They are part of the on-disk contract shared with
// MassGen's step mode, so they never change.
const (
	InfoKey         = "session.json"
	EvalCriteriaKey = "eval_criteria.json"
	StatusKey       = "status.json"
	AgentsPrefix    = "agents/"
	InboxPrefix     = "inbox/"
	FinalPrefix     = "final/"

	answerFile     = "answer.json"
	voteFile       = "vote.json"
	stopFile       = "stop.json"
	traceFile      = "trace.jsonl"
	lastActionFile = "last_action.json"
	launchFile     = "launch.json"
	claimFile      = "claim.json"
	workspaceDir   = "workspace"
)

// agentIDPattern is the config rule for agent ids; the layout relies on it so
// an id can never add a path element.
var agentIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckAgentID reports whether id can name a folder under agents/.
func CheckAgentID(id string) error {
	if !agentIDPattern.MatchString(id) {
		return fmt.Errorf("agent id %q is not valid: use 1-64 characters from A-Z, a-z, 0-9, '.', '_' and '-', starting with a letter or digit", id)
	}
	return nil
}

// StepName is the zero-padded folder name of an agent's step (1 → "001").
func StepName(step int) string { return fmt.Sprintf("%03d", step) }

// parseStepName is the inverse of StepName; it accepts only digits so that
// stray folders are never mistaken for steps.
func parseStepName(name string) (int, bool) {
	if name == "" {
		return 0, false
	}
	for _, r := range name {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(name)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// AgentPrefix is the folder of one agent, with a trailing slash.
func AgentPrefix(agent string) string { return AgentsPrefix + agent + "/" }

// StepPrefix is the folder of one agent step, with a trailing slash.
func StepPrefix(agent string, step int) string { return AgentPrefix(agent) + StepName(step) + "/" }

// AnswerKey is where an agent step's answer.json lives.
func AnswerKey(agent string, step int) string { return StepPrefix(agent, step) + answerFile }

// VoteKey is where an agent step's vote.json lives.
func VoteKey(agent string, step int) string { return StepPrefix(agent, step) + voteFile }

// StopKey is where an agent step's stop.json lives.
func StopKey(agent string, step int) string { return StepPrefix(agent, step) + stopFile }

// TraceKey is where an agent step's transcript (and checkpoint) lives.
func TraceKey(agent string, step int) string { return StepPrefix(agent, step) + traceFile }

// WorkspacePrefix is the folder holding the files delivered with an answer.
func WorkspacePrefix(agent string, step int) string {
	return StepPrefix(agent, step) + workspaceDir + "/"
}

// LastActionKey is the per-agent last_action.json, overwritten every step.
func LastActionKey(agent string) string { return AgentPrefix(agent) + lastActionFile }

// Keys of the final answer, written by the presentation.
const (
	FinalAnswerKey       = FinalPrefix + "answer.json"
	FinalMarkdownKey     = FinalPrefix + "answer.md"
	FinalWorkspacePrefix = FinalPrefix + workspaceDir + "/"
	FinalTraceKey        = FinalPrefix + traceFile // the presenter's transcript and checkpoint
)

// AnswerSlotsPrefix holds the answer slots of a session with a global
// answer cap: answers/<NNNNNN>.json, each created exclusively by the step
// whose new answer it admits (AnswerSlot), so two steps submitting at once
// cannot both take the last answer the cap allows.
const AnswerSlotsPrefix = "answers/"

// AnswerSlotKey names the n-th answer slot (1-based, creation order).
func AnswerSlotKey(n int) string { return fmt.Sprintf("%s%06d.json", AnswerSlotsPrefix, n) }

// ParseAnswerSlotKey is the inverse of AnswerSlotKey; other keys are not slots.
func ParseAnswerSlotKey(key string) (int, bool) {
	name, ok := strings.CutPrefix(key, AnswerSlotsPrefix)
	if !ok {
		return 0, false
	}
	name, ok = strings.CutSuffix(name, ".json")
	if !ok {
		return 0, false
	}
	return parseStepName(name)
}

// InboxKey names the n-th runtime human input (1-based, arrival order).
func InboxKey(n int) string { return fmt.Sprintf("%s%03d.json", InboxPrefix, n) }

// Timestamp formats t as seed 000's files do (RFC 3339, UTC), with
// microseconds: whole seconds tie for answers stored within one second,
// and the mid-stream injection cap delivers the newest first by it.
func Timestamp(t time.Time) string { return t.UTC().Format(TimestampLayout) }

// TimestampLayout is Timestamp's layout; six fractional digits, which every
// RFC 3339 reader (Python's datetime.fromisoformat included) accepts.
const TimestampLayout = "2006-01-02T15:04:05.000000Z07:00"

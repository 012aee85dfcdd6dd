package tools

import (
	"fmt"
	"slices"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/runes"
)

// Names of the workflow tools (seed 001, "Submission Semantics").
const (
	NewAnswer = "new_answer" // iterate: submit or replace this agent's answer
	Vote      = "vote"       // terminal in voting mode
	Stop      = "stop"       // terminal in decomposition mode
)

// The two outcomes a stop can report.
const (
	StopComplete = "complete"
	StopBlocked  = "blocked"
)

// Limits on workflow tool arguments. An answer is carried to every peer's
// context, so it is bounded; a reason or summary is meant to be short.
const (
	MaxAnswerBytes  = 1 << 20
	MaxReasonBytes  = 16 << 10
	MaxSummaryBytes = 16 << 10
)

// IsWorkflowTool reports whether name is a tool that ends or advances the
// agent's turn, as opposed to a workspace tool whose result the model keeps
// working with.
func IsWorkflowTool(name string) bool {
	return name == NewAnswer || name == Vote || name == Stop
}

// WorkflowSpecs returns the workflow tools offered in mode (seed 001):
// voting iterates with new_answer or ends with vote; vote_only (an answer
// limit is hit) offers vote alone rather than refusing new_answer later;
// decomposition iterates with new_answer or ends with stop, since agents do
// not compete; present is the final presentation, new_answer alone. candidates are the
// anonymous ids that have an answer to vote for (see VoteSpec); vote is left
// out when there are none, because a vote with no target can only fail. So
// ModeVoteOnly with no candidates offers nothing, and the caller should not
// start such a step. An unknown mode offers nothing.
func WorkflowSpecs(mode coord.Mode, candidates []string) []Spec {
	var specs []Spec
	switch mode {
	case coord.ModeVoting:
		specs = append(specs, NewAnswerSpec())
		if len(candidates) > 0 {
			specs = append(specs, VoteSpec(candidates))
		}
	case coord.ModeVoteOnly:
		if len(candidates) > 0 {
			specs = append(specs, VoteSpec(candidates))
		}
	case coord.ModeDecomposition:
		specs = append(specs, NewAnswerSpec(), StopSpec())
	case coord.ModePresent:
		specs = append(specs, NewAnswerSpec())
	}
	return specs
}

// NewAnswerSpec is the new_answer tool. The wording follows MassGen's: the
// answer is to the ORIGINAL MESSAGE, which is how the context labels the task.
func NewAnswerSpec() Spec {
	return Spec{
		Name: NewAnswer,
		Description: "Provide your (possibly improved) answer to the ORIGINAL MESSAGE. " +
			"Use it when no current answer fully addresses the message, or when you can clearly " +
			"improve on the best one. It replaces your previous answer and ends your turn; " +
			"do not call vote in the same response.",
		Parameters: objectSchema(map[string]any{
			"content": stringProp("Your complete answer. It must stand on its own: other agents " +
				"and the final reader see only this text, not your reasoning or tool calls. " +
				"If you used tools or wrote workspace files, say how and where."),
		}, "content"),
	}
}

// VoteSpec is the vote tool. agent_id is constrained to candidates, the
// anonymous ids that currently have an answer (e.g. ["agent1", "agent2"]), so
// a model with schema enforcement cannot name anyone else. The enum keeps the
// caller's order and drops duplicates; with no candidates there is no enum.
func VoteSpec(candidates []string) Spec {
	id := stringProp("Anonymous id of the agent whose answer is best, e.g. 'agent1'. " +
		"You may vote for yourself.")
	var enum []string
	for _, c := range candidates {
		if !slices.Contains(enum, c) {
			enum = append(enum, c)
		}
	}
	if len(enum) > 0 {
		id["enum"] = enum
	}
	return Spec{
		Name: Vote,
		Description: "Vote for the agent whose CURRENT ANSWER best addresses the ORIGINAL MESSAGE. " +
			"Vote when an existing answer is good enough that you cannot clearly improve it. " +
			"Voting ends your turn; do not call new_answer in the same response.",
		Parameters: objectSchema(map[string]any{
			"agent_id": id,
			"reason":   stringProp("Brief reason why this agent's answer is the best."),
		}, "agent_id", "reason"),
	}
}

// StopSpec is the stop tool of decomposition mode.
func StopSpec() Spec {
	return Spec{
		Name: Stop,
		Description: "Finish your part of the task. Use status 'complete' when your subtask is done " +
			"and your latest answer holds the result, or 'blocked' when you cannot make progress " +
			"without something outside your control. Stopping ends your turn; do not call " +
			"new_answer in the same response.",
		Parameters: objectSchema(map[string]any{
			"summary": stringProp("What you did and where the result is; if blocked, what is missing."),
			"status": map[string]any{
				"type":        "string",
				"enum":        []string{StopComplete, StopBlocked},
				"description": "'complete' or 'blocked'.",
			},
		}, "summary", "status"),
	}
}

// ParseNewAnswer validates new_answer arguments and returns the answer text
// unchanged. The error is written for the model.
func ParseNewAnswer(args string) (content string, err error) {
	v, err := parseArgs(NewAnswer, args,
		field{name: "content", required: true, nonEmpty: true, max: MaxAnswerBytes})
	if err != nil {
		return "", err
	}
	return v["content"], nil
}

// ParseVote validates vote arguments. It checks only their shape: whether
// agent_id names a candidate is for the caller (coord.ParseTarget also
// accepts labels such as "agent2.3"), because the candidates change between
// the offer and the call when peers answer meanwhile.
func ParseVote(args string) (agentID, reason string, err error) {
	v, err := parseArgs(Vote, args,
		field{name: "agent_id", required: true, nonEmpty: true, max: 64},
		field{name: "reason", required: true, nonEmpty: true, max: MaxReasonBytes})
	if err != nil {
		return "", "", err
	}
	return v["agent_id"], v["reason"], nil
}

// ParseStop validates stop arguments; status must be exactly "complete" or
// "blocked".
func ParseStop(args string) (summary, status string, err error) {
	v, err := parseArgs(Stop, args,
		field{name: "summary", required: true, nonEmpty: true, max: MaxSummaryBytes},
		field{name: "status", required: true, nonEmpty: true})
	if err != nil {
		return "", "", err
	}
	status = v["status"]
	if status != StopComplete && status != StopBlocked {
		return "", "", fmt.Errorf("%s: field \"status\" is %q but must be %q or %q; call %s again "+
			"with arguments {\"summary\": \"<string>\", \"status\": \"complete\"|\"blocked\"}",
			Stop, runes.Clip(status, 40), StopComplete, StopBlocked, Stop)
	}
	return v["summary"], status, nil
}

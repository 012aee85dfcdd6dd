package contract

import (
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// InitSessionInput creates session.json and eval_criteria.json.
type InitSessionInput struct {
	SessionID    string   `json:"session_id"`
	Task         string   `json:"task"`
	Agents       []string `json:"agents"`
	Mode         string   `json:"mode"`
	EvalCriteria []string `json:"eval_criteria,omitempty"`
	CreatedAt    string   `json:"created_at"` // RFC 3339, from workflow time
}

// InitSessionResult tells where the session lives.
type InitSessionResult struct {
	Location string `json:"location"` // e.g. s3://bucket/prefix/<session> or a directory
}

// AgentStepInput asks for one step of one agent. Step is assigned by the
// workflow, so a retried activity rewrites the same keys.
type AgentStepInput struct {
	SessionID string        `json:"session_id"`
	Agent     string        `json:"agent"`
	Step      int           `json:"step"`
	Launch    int           `json:"launch"` // workflow-wide launch counter: a relaunch after a restart-cancel never resumes the cancelled attempt's transcript
	Task      string        `json:"task"`
	Config    config.Config `json:"config"`
	// Mode is decided by the workflow (coord.NextMode) and selects the
	// workflow tools the step offers.
	Mode coord.Mode `json:"mode"`
	// Tally is shown on a re-vote: anonymous id → votes.
	Tally        map[string]int `json:"tally,omitempty"`
	EvalCriteria []string       `json:"eval_criteria,omitempty"`
}

// AgentStepResult is the step's action, small enough for history.
type AgentStepResult struct {
	Agent         string         `json:"agent"`
	Step          int            `json:"step"`
	Action        coord.Action   `json:"action"`
	Label         string         `json:"label,omitempty"` // agentN.M of a new answer
	AnswerPreview string         `json:"answer_preview,omitempty"`
	Target        string         `json:"target,omitempty"`
	Reason        string         `json:"reason,omitempty"`
	Summary       string         `json:"summary,omitempty"`
	StopStatus    string         `json:"stop_status,omitempty"`
	SeenSteps     map[string]int `json:"seen_steps"`
	Key           string         `json:"key"` // storage key of the action file
	Usage         coord.Usage    `json:"usage"`
}

// PresentInput asks for the final answer.
type PresentInput struct {
	SessionID string        `json:"session_id"`
	Presenter string        `json:"presenter"`
	Task      string        `json:"task"`
	Config    config.Config `json:"config"`
	// Strategy: winner_present, synthesize, or winner_reuse (copy the
	// presenter's latest stored answer; no model call — also used on timeout).
	Strategy     string   `json:"strategy"`
	EvalCriteria []string `json:"eval_criteria,omitempty"`
}

// PresentResult is the final answer.
type PresentResult struct {
	Presenter string      `json:"presenter"`
	Answer    string      `json:"answer"` // up to MaxFinalAnswerBytes, else a preview
	Truncated bool        `json:"truncated,omitempty"`
	Key       string      `json:"key"` // final/answer.json
	Usage     coord.Usage `json:"usage"`
}

// WriteStatusInput stores status.json.
type WriteStatusInput struct {
	SessionID string       `json:"session_id"`
	Status    coord.Status `json:"status"`
}

// WriteInboxInput stores one human input as inbox/<NNN>.json.
type WriteInboxInput struct {
	SessionID string `json:"session_id"`
	Seq       int    `json:"seq"` // 1-based arrival order, assigned by the workflow
	Text      string `json:"text"`
	At        string `json:"at"`
}

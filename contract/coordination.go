package contract

import (
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// Owner is the workflow that owns a session: its id and the first run id
// of its chain. Retries, continue-as-new and resets keep both, so the
// owner's later runs go on writing its session; a new workflow, or the
// same workflow id started again, has another first run id and is refused.
type Owner struct {
	WorkflowID string `json:"workflow_id"`
	FirstRunID string `json:"first_run_id"`
}

// String names the owner in error messages.
func (o Owner) String() string {
	return "workflow " + o.WorkflowID + " (first run " + o.FirstRunID + ")"
}

// SessionRef is what an activity that writes a session expects to find
// there.
type SessionRef struct {
	// Owner must be the session's recorded owner, else the activity is
	// refused (ErrTypeSessionOwned).
	Owner *Owner `json:"owner,omitempty"`
	// Location is where InitSession created the session; a worker whose
	// storage does not hold it there refuses the attempt (ErrTypeWrongStorage).
	Location string `json:"location,omitempty"`
}

// InitSessionInput creates the session for Owner: owner.json
// (exclusively), session.json, config.json and eval_criteria.json. The
// config is as the session was started; InitSession applies the defaults
// and validates it (PrepareSession).
type InitSessionInput struct {
	SessionID    string        `json:"session_id"`
	Task         string        `json:"task"`
	Config       config.Config `json:"config"`
	EvalCriteria []string      `json:"eval_criteria,omitempty"`
	CreatedAt    string        `json:"created_at"` // RFC 3339, from workflow time
	Owner        Owner         `json:"owner"`
}

// InitSessionResult tells where the session lives and what it runs by.
type InitSessionResult struct {
	Location string `json:"location"` // e.g. s3://bucket/prefix/<session> or a directory
	// InputsHash binds later steps to the stored task, config and criteria.
	InputsHash string      `json:"inputs_hash"`
	Plan       SessionPlan `json:"plan"`
}

// AgentStepInput asks for one step of one agent. Step is assigned by the
// workflow, so a retried activity rewrites the same keys.
type AgentStepInput struct {
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	Step      int    `json:"step"`
	Launch    int    `json:"launch"` // workflow-wide launch counter: a relaunch after a restart-cancel never resumes the cancelled attempt's transcript
	SessionRef
	// InputsHash says the task, config and criteria are the ones stored in
	// the session with this hash: inputs by reference keep every step's
	// history events small whatever the task or team size.
	InputsHash string `json:"inputs_hash"`
	// Mode is decided by the workflow (coord.NextMode) and selects the
	// workflow tools the step offers.
	Mode coord.Mode `json:"mode"`
	// Tally is shown on a re-vote: anonymous id → votes.
	Tally map[string]int `json:"tally,omitempty"`
	// Evaluation is the round evaluation (RoundEvaluator's round) a gated
	// step works from; 0 for none.
	Evaluation int `json:"evaluation,omitempty"`
	// AutoStop, when set, ends the step without a model call in a stop
	// with status complete and this summary, which names the limit
	// reached (coord.AutoStop: decomposition mode's answer limits).
	AutoStop string `json:"auto_stop,omitempty"`
	// Visible is what the step is shown, decided by the workflow when it
	// launches the step: agent → step of the latest answer shown (its
	// latest stored at or before that step). An empty map shows nothing
	// (first-answer protection).
	Visible map[string]int `json:"visible"`
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
	// Checklist summarises a gated step's checklist (checklist.json).
	Checklist *coord.Checklist `json:"checklist,omitempty"`
}

// FenceStepInput asks to fence off one launch of an agent step before the
// workflow abandons it (update_mode restart, the orchestrator timeout,
// cancellation): agents/<agent>/<NNN>/launch.json is created as a fence,
// unless the launch has committed to the folder already.
type FenceStepInput struct {
	SessionID string `json:"session_id"`
	SessionRef
	Agent  string `json:"agent"`
	Step   int    `json:"step"`
	Launch int    `json:"launch"`
	// Reason is recorded in the fence: restart, timeout or cancelled.
	Reason string `json:"reason"`
}

// FenceStepResult tells whether the launch may still write its folder.
type FenceStepResult struct {
	// Committed: the launch had committed before the fence, so it writes
	// its action and the workflow records its result as usual. Otherwise
	// the launch can never write its folder (it is fenced, now or before,
	// or another launch holds it): the workflow cancels it, ignores its
	// result and relaunches the agent with the next step number.
	Committed bool `json:"committed"`
}

// PresentInput asks for the final answer.
type PresentInput struct {
	SessionID string `json:"session_id"`
	Presenter string `json:"presenter"`
	SessionRef
	// InputsHash: as in AgentStepInput.
	InputsHash string `json:"inputs_hash"`
	// Strategy: winner_present, synthesize, or winner_reuse (copy the
	// presenter's latest stored answer; no model call — also used on timeout).
	Strategy string `json:"strategy"`
	// NoVote says no vote round was held (skip_voting, the quick
	// synthesize path): the presenter was not chosen by its peers, so a
	// synthesis is neutral instead of built on the presenter's answer.
	NoVote bool `json:"no_vote,omitempty"`
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
	SessionID string `json:"session_id"`
	SessionRef
	Status coord.Status `json:"status"`
}

// WriteInboxInput stores one human input as inbox/<NNN>.json.
type WriteInboxInput struct {
	SessionID string `json:"session_id"`
	SessionRef
	Seq  int    `json:"seq"` // 1-based arrival order, assigned by the workflow
	Text string `json:"text"`
	At   string `json:"at"`
}

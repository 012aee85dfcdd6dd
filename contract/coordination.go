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
// there. Inputs recorded before sessions had owners leave both empty and
// are not checked.
type SessionRef struct {
	// Owner must be the session's recorded owner, else the activity is
	// refused (ErrTypeSessionOwned).
	Owner *Owner `json:"owner,omitempty"`
	// Location is where InitSession created the session; a worker whose
	// storage does not hold it there refuses the attempt (ErrTypeWrongStorage).
	Location string `json:"location,omitempty"`
}

// InitSessionInput creates the session: owner.json (exclusively, when
// Owner is set), session.json, config.json and eval_criteria.json.
type InitSessionInput struct {
	SessionID    string   `json:"session_id"`
	Task         string   `json:"task"`
	Agents       []string `json:"agents"`
	Mode         string   `json:"mode"`
	EvalCriteria []string `json:"eval_criteria,omitempty"`
	CreatedAt    string   `json:"created_at"` // RFC 3339, from workflow time
	// Owner and Config are set by workflows that pass inputs by reference:
	// the session is created for Owner only, and the config is stored for
	// the steps to load. Both are absent in histories recorded before.
	Owner  *Owner         `json:"owner,omitempty"`
	Config *config.Config `json:"config,omitempty"`
}

// InitSessionResult tells where the session lives.
type InitSessionResult struct {
	Location string `json:"location"` // e.g. s3://bucket/prefix/<session> or a directory
	// InputsHash binds later steps to the stored task, config and criteria;
	// empty from a worker that stores no config (steps then carry them).
	InputsHash string `json:"inputs_hash,omitempty"`
}

// AgentStepInput asks for one step of one agent. Step is assigned by the
// workflow, so a retried activity rewrites the same keys.
type AgentStepInput struct {
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	Step      int    `json:"step"`
	Launch    int    `json:"launch"` // workflow-wide launch counter: a relaunch after a restart-cancel never resumes the cancelled attempt's transcript
	SessionRef
	// InputsHash, when set, says the task, config and criteria are the
	// ones stored in the session with this hash (Task, Config and
	// EvalCriteria are then empty): inputs by reference keep every step's
	// history events small whatever the task or team size.
	InputsHash string        `json:"inputs_hash,omitempty"`
	Task       string        `json:"task,omitempty"`
	Config     config.Config `json:"config,omitzero"`
	// Mode is decided by the workflow (coord.NextMode) and selects the
	// workflow tools the step offers.
	Mode coord.Mode `json:"mode"`
	// Tally is shown on a re-vote: anonymous id → votes.
	Tally        map[string]int `json:"tally,omitempty"`
	EvalCriteria []string       `json:"eval_criteria,omitempty"`
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
	// (first-answer protection); absent (histories recorded before the
	// workflow decided) shows what storage holds when the step starts.
	Visible map[string]int `json:"visible,omitzero"`
	// Fenced says the step commits to its folder through launch.json
	// before it writes anything but its checkpoint, so that once the
	// workflow fences the launch (FenceStep) it can never write there: it
	// fails with ErrTypeSuperseded instead. Absent in histories recorded
	// before steps were fenced.
	Fenced bool `json:"fenced,omitempty"`
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
	InputsHash string        `json:"inputs_hash,omitempty"`
	Task       string        `json:"task,omitempty"`
	Config     config.Config `json:"config,omitzero"`
	// Strategy: winner_present, synthesize, or winner_reuse (copy the
	// presenter's latest stored answer; no model call — also used on timeout).
	Strategy     string   `json:"strategy"`
	EvalCriteria []string `json:"eval_criteria,omitempty"`
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

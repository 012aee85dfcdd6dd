package session

import "time"

// Info is session.json: what the session is about, never a secret.
type Info struct {
	Task      string    `json:"task"`
	Agents    []string  `json:"agents"`
	Mode      string    `json:"mode"`
	CreatedAt time.Time `json:"created_at"`
}

// OwnerFile is owner.json: the workflow run chain a Temporal session
// belongs to (contract.Owner), created exclusively before any other file
// of the session, and the InputsHash of the task, config.json and
// eval_criteria.json it was created with. Step mode writes none. It is
// small, so every write of a step can check it cheaply.
type OwnerFile struct {
	WorkflowID string `json:"workflow_id"`
	FirstRunID string `json:"first_run_id"`
	InputsHash string `json:"inputs_hash"`
}

// AnswerFile is answer.json as seed 000 defines it, plus seen_steps: what
// the agent had seen of every agent's answers when it submitted it, as in
// vote.json (decomposition mode counts answer streaks from it). Answers
// stored before it have none.
type AnswerFile struct {
	AgentID   string         `json:"agent_id"`
	Answer    string         `json:"answer"`
	SeenSteps map[string]int `json:"seen_steps,omitempty"`
	Timestamp string         `json:"timestamp"`
}

// VoteFile is vote.json exactly as seed 000 defines it, plus its timestamp.
type VoteFile struct {
	Voter     string         `json:"voter"`
	Target    string         `json:"target"`
	Reason    string         `json:"reason"`
	SeenSteps map[string]int `json:"seen_steps"`
	Timestamp string         `json:"timestamp"`
}

// StopFile is stop.json, decomposition mode's terminal action.
type StopFile struct {
	AgentID   string         `json:"agent_id"`
	Summary   string         `json:"summary"`
	Status    string         `json:"status"`
	SeenSteps map[string]int `json:"seen_steps"`
	Timestamp string         `json:"timestamp"`
}

// LastAction is the per-agent last_action.json of seed 000. Fields that do not
// apply to the action are written as null, as MassGen writes them.
type LastAction struct {
	AgentID         string         `json:"agent_id"`
	Action          string         `json:"action"`
	AnswerText      *string        `json:"answer_text"`
	VoteTarget      *string        `json:"vote_target"`
	VoteReason      *string        `json:"vote_reason"`
	Timestamp       string         `json:"timestamp"`
	StepNumber      int            `json:"step_number"`
	DurationSeconds float64        `json:"duration_seconds"`
	Cost            map[string]any `json:"cost"`
	WorkspacePath   *string        `json:"workspace_path"`
}

// AnswerSlot is answers/<NNNNNN>.json: the step whose new answer it
// admitted under max_new_answers_global. The slot counts toward the cap
// while that step may still store its answer: not once the step ended
// without one (a vote or stop at that step, or a later step of the agent),
// nor once its launch marker says it is fenced.
type AnswerSlot struct {
	Agent  string `json:"agent"`
	Step   int    `json:"step"`
	Launch string `json:"launch,omitempty"`
}

// InboxMessage is inbox/<NNN>.json: one runtime human input.
type InboxMessage struct {
	Seq  int    `json:"seq"`
	Text string `json:"text"`
	At   string `json:"at"`
}

// FinalAnswer is final/answer.json.
type FinalAnswer struct {
	AgentID   string `json:"agent_id"`
	Label     string `json:"label"` // agentN.final
	Answer    string `json:"answer"`
	Strategy  string `json:"strategy"`
	Source    string `json:"source"` // the stored answer it started from (agentN.M)
	Timestamp string `json:"timestamp"`
}

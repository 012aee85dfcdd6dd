// Package coord holds the pure coordination rules of Conclave: anonymous
// labels, stale votes, agent states, the relaunch set, consensus, answer
// limits, fairness and the timeout winner. It does no I/O and never depends on
// map iteration order, so Temporal workflows can call it deterministically.
package coord

// Action is the workflow action that ended an agent step.
type Action string

// The workflow actions of seeds 000 and 001.
const (
	ActionNone      Action = ""
	ActionNewAnswer Action = "new_answer"
	ActionVote      Action = "vote"
	ActionStop      Action = "stop"
)

// AgentState is what an external orchestrator needs to know about an agent to
// decide whether to relaunch it (seed 000's per-agent states plus failed).
type AgentState string

// Agent states.
const (
	StateNoAction AgentState = "no_action"
	StateAnswered AgentState = "answered"
	StateVoted    AgentState = "voted"
	StateStopped  AgentState = "stopped"
	StateFailed   AgentState = "failed"
)

// Vote is one recorded vote (vote.json). Invalid marks a vote file that was
// present but unreadable or incomplete: such a vote is always stale.
type Vote struct {
	Voter     string         `json:"voter"`
	Target    string         `json:"target"`
	Reason    string         `json:"reason,omitempty"`
	SeenSteps map[string]int `json:"seen_steps"`
	Step      int            `json:"step"`
	Invalid   bool           `json:"invalid,omitempty"`
}

// Stop is one recorded decomposition-mode stop (stop.json).
type Stop struct {
	Summary   string         `json:"summary"`
	Status    string         `json:"status"`
	SeenSteps map[string]int `json:"seen_steps"`
	Step      int            `json:"step"`
}

// Agent is the ledger of one agent, as loaded from a session or kept by the
// workflow. Steps are the agent's own 1-based step numbers.
type Agent struct {
	ID string `json:"id"`
	// LatestStep is the highest step number with a recorded action (0: none).
	LatestStep int `json:"latest_step"`
	// GivenUpStep is the highest step number the workflow gave up without
	// an action (fenced by a restart, superseded, ended by the round
	// timeout): its number is not reused, so it counts toward
	// max_steps_per_agent like a step that acted.
	GivenUpStep int `json:"given_up_step,omitempty"`
	// LatestAnswerStep is the step of the agent's newest answer (0: none).
	LatestAnswerStep int `json:"latest_answer_step"`
	// AnswerCount is how many answers the agent has submitted.
	AnswerCount int `json:"answer_count"`
	// LastAction is the action of LatestStep.
	LastAction Action `json:"last_action"`
	// Vote is the vote of LatestStep when LastAction is a vote.
	Vote *Vote `json:"vote,omitempty"`
	// Stop is the stop of LatestStep when LastAction is a stop.
	Stop *Stop `json:"stop,omitempty"`
	// Failed agents are dropped from coordination and never relaunched.
	Failed bool `json:"failed,omitempty"`
	// FailReason says why a failed agent was dropped ("step 2: …"), for
	// the operator who has to fix it.
	FailReason string `json:"fail_reason,omitempty"`
	// Running marks an agent whose current step has not finished.
	Running bool `json:"running,omitempty"`
	// Checklist summarises the checklist of the agent's latest gated step
	// (voting_sensitivity: checklist_gated), nil otherwise.
	Checklist *Checklist `json:"checklist,omitempty"`
	// AnswerStreak is decomposition mode's count of the agent's consecutive
	// answers without news from peers, up to its latest answer (Streak).
	AnswerStreak int `json:"answer_streak,omitempty"`
	// AnswerSeen is the seen_steps of the agent's latest answer: what it
	// had seen of its peers when it submitted it (nil when not recorded).
	AnswerSeen map[string]int `json:"answer_seen,omitempty"`
}

// Checklist is what status.json, `conclave status` and the Web UI show of
// an agent's latest checklist: its verdict, the best answer it scored, and
// how many submissions were accepted or refused.
type Checklist struct {
	Verdict  string `json:"verdict,omitempty"`
	Best     string `json:"best,omitempty"`
	Accepted int    `json:"accepted"`
	Invalid  int    `json:"invalid"`
}

// Ledger is the coordination state of a whole session. Agents keep
// configuration order, which breaks ties where a rule needs it.
type Ledger struct {
	Agents []Agent `json:"agents"`
}

package coord

import (
	"encoding/json"
	"fmt"
)

// Session phases reported in status.json.
const (
	PhaseCoordinating = "coordinating"
	PhasePresenting   = "presenting"
	PhaseDone         = "done"
	PhaseFailed       = "failed"
	PhaseCancelled    = "cancelled"
	PhaseTimeout      = "timeout"
)

// Status is the snapshot of coordination written to status.json and returned
// by the workflow's status query. Maps and slices are never nil and Winner is
// always present, so clients see {} / [] / "" instead of null.
type Status struct {
	Phase  string                 `json:"phase"`
	Agents map[string]AgentStatus `json:"agents"`
	// Consensus is true only when the agents agreed: a majority of fresh
	// votes, or a decomposition whose agents all stopped. A winner named
	// by plurality (a split after the re-votes, rule plurality, a stall)
	// leaves it false; DecidedBy says which.
	Consensus bool `json:"consensus"`
	// DecidedBy is how the winner was decided once there is one: "consensus"
	// or "plurality" (the Status of the verdict); empty before.
	DecidedBy string         `json:"decided_by,omitempty"`
	Winner    string         `json:"winner"`
	Relaunch  []string       `json:"relaunch"`
	Votes     map[string]int `json:"votes"`
	// Revote, in step mode's `session status`, is the re-vote the session
	// calls for: Relaunch then lists its agents, to be stepped vote-only
	// and shown the tally.
	Revote *RevoteCall `json:"revote,omitempty"`
	Usage  Usage       `json:"usage"`
	// PresentationFallback, when set, is why the model-backed presentation
	// failed and the winner's stored answer was used as the final one.
	PresentationFallback string `json:"presentation_fallback,omitempty"`
}

// AgentStatus is one agent's line in Status, keyed by real id: the status is
// for operators, not models.
type AgentStatus struct {
	State            AgentState `json:"state"`
	LatestStep       int        `json:"latest_step"`
	LatestAnswerStep int        `json:"latest_answer_step"`
	AnswerCount      int        `json:"answer_count"`
	// GivenUpStep is the last step number given up without an action (its
	// folder is fenced), when it is past LatestStep's.
	GivenUpStep int `json:"given_up_step,omitempty"`
	// VoteTarget is the target of the agent's current vote, "" when its
	// latest action is not a vote.
	VoteTarget string `json:"vote_target"`
	// VoteStale is true when the agent's latest action is a vote that no
	// longer counts (a missing vote file included).
	VoteStale bool `json:"vote_stale"`
	// FailReason is why a failed agent was dropped.
	FailReason string `json:"fail_reason,omitempty"`
	// Running is true while the agent's next step is in progress; State is
	// still that of its latest finished step. A running step blocks the
	// end of coordination.
	Running bool `json:"running,omitempty"`
	// Checklist is the agent's latest checklist (gated sessions only).
	Checklist *Checklist `json:"checklist,omitempty"`
}

// Usage is the token and cost total of a session.
//
// In JSON, cost_usd is null when no tokens were priced (the cost is
// unknown, not zero), and "unpriced": true marks a total that leaves out
// some unpriced tokens.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	// Unpriced is true when some of the tokens came from a model without
	// a configured price.
	Unpriced bool `json:"unpriced,omitempty"`
}

// usageJSON is Usage's wire form.
type usageJSON struct {
	InputTokens  int64    `json:"input_tokens"`
	OutputTokens int64    `json:"output_tokens"`
	CostUSD      *float64 `json:"cost_usd"`
	Unpriced     bool     `json:"unpriced,omitempty"`
}

// MarshalJSON writes cost_usd as null when the cost is unknown.
func (u Usage) MarshalJSON() ([]byte, error) {
	w := usageJSON{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Unpriced: u.Unpriced}
	if !u.CostUnknown() {
		cost := u.CostUSD
		w.CostUSD = &cost
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes: a null cost_usd is an
// unknown cost.
func (u *Usage) UnmarshalJSON(data []byte) error {
	var w struct {
		InputTokens  int64           `json:"input_tokens"`
		OutputTokens int64           `json:"output_tokens"`
		CostUSD      json.RawMessage `json:"cost_usd"`
		Unpriced     bool            `json:"unpriced"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*u = Usage{InputTokens: w.InputTokens, OutputTokens: w.OutputTokens, Unpriced: w.Unpriced}
	switch string(w.CostUSD) {
	case "":
	case "null":
		u.Unpriced = true
	default:
		return json.Unmarshal(w.CostUSD, &u.CostUSD)
	}
	return nil
}

// CostUnknown tells whether nothing of the usage was priced.
func (u Usage) CostUnknown() bool { return u.Unpriced && u.CostUSD == 0 }

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:  u.InputTokens + o.InputTokens,
		OutputTokens: u.OutputTokens + o.OutputTokens,
		CostUSD:      u.CostUSD + o.CostUSD,
		Unpriced:     u.Unpriced || o.Unpriced,
	}
}

// Cost is the cost for people: "$0.0123", "unknown" when nothing was
// priced, "$0.0123 + unknown" when some tokens were not.
func (u Usage) Cost() string {
	switch {
	case u.CostUnknown():
		return "unknown"
	case u.Unpriced:
		return fmt.Sprintf("$%.4f + unknown", u.CostUSD)
	}
	return fmt.Sprintf("$%.4f", u.CostUSD)
}

// Summarize builds the status of a ledger under a verdict, the one view
// of the workflow's status query, its status.json and step mode's
// `session status`. Winner is the verdict's; Consensus is true only for a
// verdict of StatusConsensus (an agreement), and DecidedBy names the
// status of any decided verdict, so a tie settled by plurality reads
// consensus false, decided_by "plurality". Relaunch is what coordination would step next, empty
// once the phase is past coordinating. Usage is left zero: it comes from
// the steps' traces, which the ledger does not hold.
func Summarize(l Ledger, v Verdict, phase string) Status {
	s := Status{
		Phase:     phase,
		Agents:    make(map[string]AgentStatus, len(l.Agents)),
		Consensus: v.Done && v.Status == StatusConsensus,
		Winner:    v.Winner,
		Relaunch:  []string{},
		Votes:     Tally(l),
	}
	if v.Decided() {
		s.DecidedBy = v.Status
	}
	if phase == PhaseCoordinating {
		s.Relaunch = Relaunch(l)
	}
	for _, a := range l.Agents {
		if _, dup := s.Agents[a.ID]; dup {
			continue
		}
		as := AgentStatus{
			State:            StateOf(a),
			LatestStep:       a.LatestStep,
			LatestAnswerStep: a.LatestAnswerStep,
			AnswerCount:      a.AnswerCount,
			FailReason:       a.FailReason,
			Running:          a.Running,
			Checklist:        a.Checklist,
		}
		if a.GivenUpStep > a.LatestStep {
			as.GivenUpStep = a.GivenUpStep
		}
		if a.LastAction == ActionVote {
			if v := CurrentVote(a); v != nil {
				as.VoteTarget = v.Target
			}
			as.VoteStale = Stale(l, a.Vote)
		}
		s.Agents[a.ID] = as
	}
	return s
}

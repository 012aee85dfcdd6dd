package coord

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
	Phase     string                 `json:"phase"`
	Agents    map[string]AgentStatus `json:"agents"`
	Consensus bool                   `json:"consensus"`
	Winner    string                 `json:"winner"`
	Relaunch  []string               `json:"relaunch"`
	Votes     map[string]int         `json:"votes"`
	Usage     Usage                  `json:"usage"`
}

// AgentStatus is one agent's line in Status, keyed by real id: the status is
// for operators, not models.
type AgentStatus struct {
	State            AgentState `json:"state"`
	LatestStep       int        `json:"latest_step"`
	LatestAnswerStep int        `json:"latest_answer_step"`
	AnswerCount      int        `json:"answer_count"`
	// VoteTarget is the target of the agent's current vote, "" when its
	// latest action is not a vote.
	VoteTarget string `json:"vote_target"`
	// VoteStale is true when the agent's latest action is a vote that no
	// longer counts (a missing vote file included).
	VoteStale bool `json:"vote_stale"`
}

// Usage is the token and cost total of a session.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Summarize builds the status of a ledger under a verdict, the one view
// of the workflow's status query, its status.json and step mode's
// `session status`. Consensus and Winner are the verdict's (consensus means
// a winner was agreed, by majority, plurality or a completed
// decomposition); Relaunch is what coordination would step next, empty
// once the phase is past coordinating. Usage is left zero: it comes from
// the steps' traces, which the ledger does not hold.
func Summarize(l Ledger, v Verdict, phase string) Status {
	s := Status{
		Phase:     phase,
		Agents:    make(map[string]AgentStatus, len(l.Agents)),
		Consensus: v.Decided(),
		Winner:    v.Winner,
		Relaunch:  []string{},
		Votes:     Tally(l),
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

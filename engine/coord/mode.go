package coord

// Mode is what a step may end in: it selects the workflow tools the engine
// offers. It is the one mode type of Conclave: the workflow decides it, the
// activity input carries it, and the engine's policies read it.
type Mode string

// Step modes.
const (
	// ModeVoting offers new_answer, and vote once any answer exists.
	ModeVoting Mode = "voting"
	// ModeVoteOnly offers vote alone: the agent hit an answer limit.
	ModeVoteOnly Mode = "vote_only"
	// ModeDecomposition offers new_answer and stop.
	ModeDecomposition Mode = "decomposition"
	// ModePresent offers new_answer alone: the final presentation.
	ModePresent Mode = "present"
)

// Valid reports whether m is one of the modes above.
func (m Mode) Valid() bool {
	switch m {
	case ModeVoting, ModeVoteOnly, ModeDecomposition, ModePresent:
		return true
	}
	return false
}

// NextMode decides the mode of an agent's next coordination step, the one
// rule shared by the workflow's schedule and step mode. In decomposition
// mode it is always decomposition. Otherwise an agent that may still answer
// votes or answers; a capped agent is vote-only, unless there is no answer
// anywhere to vote for, in which case ok is false: such a step could only
// fail its enforcement, so the caller waits for an answer instead.
func NextMode(l Ledger, agent string, decomposition bool, lim Limits) (m Mode, ok bool) {
	if decomposition {
		return ModeDecomposition, true
	}
	if can, _ := CanAnswer(l, agent, lim); can {
		return ModeVoting, true
	}
	if TotalAnswers(l) == 0 {
		return ModeVoteOnly, false
	}
	return ModeVoteOnly, true
}

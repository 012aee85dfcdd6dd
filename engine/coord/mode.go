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
// mode it is always decomposition (limits there stop the agent: AutoStop).
// Otherwise an agent under the answer limits votes or answers; an agent at
// max_new_answers_per_agent or max_new_answers_global is vote-only, unless
// there is no answer anywhere to vote for, in which case ok is false: such
// a step could only fail its enforcement, so the caller waits for an
// answer instead. Fairness is not an answer limit: an agent at the lead cap
// is paused (Paused) or, when no slower peer can catch up, runs in voting
// mode and the submission check (CanSubmit) refuses an answer over the cap.
func NextMode(l Ledger, agent string, decomposition bool, lim Limits) (m Mode, ok bool) {
	if decomposition {
		return ModeDecomposition, true
	}
	i := l.index(agent)
	if i >= 0 && !l.Agents[i].Failed && answerCapped(l, l.Agents[i], lim) == "" {
		return ModeVoting, true
	}
	if TotalAnswers(l) == 0 {
		return ModeVoteOnly, false
	}
	return ModeVoteOnly, true
}

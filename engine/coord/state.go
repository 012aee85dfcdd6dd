package coord

// StateOf is the agent's state as seed 000's external state machine sees it.
// Failure wins over everything, since a failed agent is out of coordination.
// An unknown action counts as no action, so the agent is simply relaunched.
func StateOf(a Agent) AgentState {
	if a.Failed {
		return StateFailed
	}
	switch a.LastAction {
	case ActionNewAnswer:
		return StateAnswered
	case ActionVote:
		return StateVoted
	case ActionStop:
		return StateStopped
	default:
		return StateNoAction
	}
}

// Relaunch lists, in configuration order, the agents that need another step:
// those with no action, those whose latest action is an answer (they must
// still vote or iterate), stale voters, and stale stoppers. A stop only occurs
// in decomposition mode, so a stale stop is relaunched without asking for the
// mode. Failed agents are never relaunched and running agents are already
// busy. The result is never nil, so it encodes as [] in status.json.
func Relaunch(l Ledger) []string {
	out := []string{}
	for _, a := range l.Agents {
		if !a.Failed && !a.Running && needsStep(l, a) {
			out = append(out, a.ID)
		}
	}
	return out
}

// needsStep reports whether the agent's recorded state calls for a new step.
func needsStep(l Ledger, a Agent) bool {
	switch StateOf(a) {
	case StateNoAction, StateAnswered:
		return true
	case StateVoted:
		return Stale(l, a.Vote)
	case StateStopped:
		return StaleStop(l, a.Stop)
	default:
		return false
	}
}

// Find is the agent with the given id, or nil. The pointer is into
// l.Agents, so the workflow updates its ledger through it.
func (l Ledger) Find(id string) *Agent {
	if i := l.index(id); i >= 0 {
		return &l.Agents[i]
	}
	return nil
}

// Alive counts the agents that have not failed: the N of the consensus
// rules.
func Alive(l Ledger) int {
	n := 0
	for _, a := range l.Agents {
		if !a.Failed {
			n++
		}
	}
	return n
}

// AnyRunning reports whether some agent's step has not finished.
func AnyRunning(l Ledger) bool {
	for _, a := range l.Agents {
		if a.Running {
			return true
		}
	}
	return false
}

// TotalAnswers sums the answers of all agents, failed ones included: they
// were submitted and are stored, so they count toward the global cap.
func TotalAnswers(l Ledger) int {
	total := 0
	for _, a := range l.Agents {
		total += a.AnswerCount
	}
	return total
}

// index is the position of the agent with the given id, or -1. With duplicate
// ids the first one wins, like configuration order does elsewhere.
func (l Ledger) index(id string) int {
	for i, a := range l.Agents {
		if a.ID == id {
			return i
		}
	}
	return -1
}

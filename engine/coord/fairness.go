package coord

import "fmt"

// FairnessLead is how many answers the agent is ahead of the slowest alive
// peer: its AnswerCount minus the smallest AnswerCount among the other
// non-failed agents. It is 0 for an unknown agent or one without alive peers,
// and negative when the agent trails everyone. Failed peers are left out, or a
// crashed agent would freeze everyone else's progress.
func FairnessLead(l Ledger, agent string) int {
	i := l.index(agent)
	if i < 0 {
		return 0
	}
	lead, _ := leadOver(l, i)
	return lead
}

// leadOver is the lead of l.Agents[self] over its slowest alive peer; ok is
// false without alive peers.
func leadOver(l Ledger, self int) (lead int, ok bool) {
	slowest := 0
	for i, p := range l.Agents {
		if p.Failed || i == self {
			continue
		}
		if !ok || p.AnswerCount < slowest {
			slowest, ok = p.AnswerCount, true
		}
	}
	if !ok {
		return 0, false
	}
	return l.Agents[self].AnswerCount - slowest, true
}

// fairnessBlock is the reason the lead cap blocks the next answer of
// l.Agents[self], or "". A
// lead of cap or more blocks, so after answering the lead never exceeds the
// cap. A first answer is never blocked: every agent is owed one independent
// attempt before pacing applies (seed 001, "Fairness and Pacing").
func fairnessBlock(l Ledger, self int, leadCap *int) string {
	if leadCap == nil || l.Agents[self].AnswerCount == 0 {
		return ""
	}
	lead, ok := leadOver(l, self)
	if !ok || lead < *leadCap {
		return ""
	}
	return fmt.Sprintf("fairness lead cap reached (%d answers ahead of the slowest peer, cap %d): "+
		"vote, or wait for peers to catch up", lead, *leadCap)
}

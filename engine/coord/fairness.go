package coord

import "fmt"

// leadOver is how many answers l.Agents[self] is ahead of its slowest
// alive peer (negative when it trails everyone); ok is false without alive
// peers. Failed peers are left out, or a crashed agent would freeze
// everyone else's progress.
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
// l.Agents[self], or "". A lead of cap or more blocks, so after answering
// the lead never exceeds the cap. A first answer is never blocked: every
// agent is owed one independent attempt before pacing applies (seed 001,
// "Fairness and Pacing").
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

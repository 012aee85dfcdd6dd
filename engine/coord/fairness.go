package coord

import "fmt"

// leadOver is how many answers l.Agents[self] is ahead of its slowest
// alive peer (negative when it trails everyone); ok is false without alive
// peers. Failed peers are left out, or a crashed agent would freeze
// everyone else's progress; so are, in decomposition, peers whose latest
// action is a stop: they said their part is done, and revisiting it when
// news arrives they may well stop again, never catching up (the streak
// limit is what bounds an agent that keeps answering there).
func leadOver(l Ledger, self int, decomposition bool) (lead int, ok bool) {
	slowest := 0
	for i, p := range l.Agents {
		if p.Failed || i == self || (decomposition && p.LastAction == ActionStop) {
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
// "Fairness and Pacing"). instead says what the model should do.
func fairnessBlock(l Ledger, self int, leadCap *int, instead string, decomposition bool) string {
	if leadCap == nil || l.Agents[self].AnswerCount == 0 {
		return ""
	}
	lead, ok := leadOver(l, self, decomposition)
	if !ok || lead < *leadCap {
		return ""
	}
	return fmt.Sprintf("fairness lead cap reached (%d answers ahead of the slowest peer, cap %d): "+
		"%s; you may answer again later, once slower peers have caught up", lead, *leadCap, instead)
}

// Paused is seed 001's pre-start fairness pause: the agent is at the lead
// cap and a slower alive peer that can still answer is running or due for
// a step, so the agent is not launched until that peer has caught up (or
// can no longer answer). A step launched now could only be refused its
// answer. It never holds back a first answer, nor an agent that may not
// answer anyway (answer limits, auto-stop). Only strictly slower peers
// hold an agent back, so pauses cannot wait on each other in a circle, and
// the slowest peer is never paused: a session with a pause always has a
// step to run.
func Paused(l Ledger, agent string, lim Limits, decomposition bool) bool {
	i := l.index(agent)
	if i < 0 || lim.FairnessLeadCap == nil {
		return false
	}
	a := l.Agents[i]
	if a.Failed || a.AnswerCount == 0 || !mayAnswer(l, a, lim, decomposition) {
		return false
	}
	for j, p := range l.Agents {
		if j == i || p.Failed || p.AnswerCount >= a.AnswerCount || a.AnswerCount-p.AnswerCount < *lim.FairnessLeadCap {
			continue
		}
		if p.Running || (needsStep(l, p) && !StepsExhausted(p, lim) && mayAnswer(l, p, lim, decomposition)) {
			return true
		}
	}
	return false
}

// mayAnswer reports whether the agent's next step may still give an answer
// as far as the answer limits go (fairness aside).
func mayAnswer(l Ledger, a Agent, lim Limits, decomposition bool) bool {
	if decomposition {
		return AutoStop(l, a.ID, lim) == ""
	}
	return answerCapped(l, a, lim) == ""
}

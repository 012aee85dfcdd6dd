package coord

import "fmt"

// Streak is decomposition mode's answer streak (seed 001,
// decomposition_answer_streak) that a new answer of a would have when a
// submits it having seen seen: 1 for a first answer, or when a has seen a
// peer answer newer than what it had seen at its previous answer (news
// from peers resets the streak); otherwise one more than its current
// streak. The workflow and the session loader both count streaks with it.
func Streak(l Ledger, a Agent, seen map[string]int) int {
	if a.AnswerCount == 0 || news(l, a, seen) {
		return 1
	}
	return a.AnswerStreak + 1
}

// news reports whether seen holds a peer answer newer than what a had seen
// at its latest answer. Peers are walked in ledger order, never map order.
func news(l Ledger, a Agent, seen map[string]int) bool {
	for _, p := range l.Agents {
		if p.ID != a.ID && seen[p.ID] > a.AnswerSeen[p.ID] {
			return true
		}
	}
	return false
}

// LatestSeen is what a step launched now is shown: every agent's latest
// answer step (agents without an answer left out). It is also the
// seen_steps of an automatic stop.
func LatestSeen(l Ledger) map[string]int {
	seen := map[string]int{}
	for _, a := range l.Agents {
		if a.LatestAnswerStep > 0 {
			seen[a.ID] = a.LatestAnswerStep
		}
	}
	return seen
}

// AutoStop is why a decomposition-mode agent stops without a model call
// before its next step, or "" (seed 001, "hit limits auto-stop the agent
// instead of vote-only mode"): the global cap is reached, or its answer
// streak is at the per-agent cap and no peer has answered since its latest
// answer (a step now would see no news, so any answer would break the
// cap). The reason is the stop's summary, naming the limit.
func AutoStop(l Ledger, agent string, lim Limits) string {
	i := l.index(agent)
	if i < 0 {
		return ""
	}
	a := l.Agents[i]
	if m := lim.MaxNewAnswersGlobal; m != nil && TotalAnswers(l) >= *m {
		return fmt.Sprintf("stopped automatically: max_new_answers_global (%d) reached", *m)
	}
	if m := lim.MaxNewAnswersPerAgent; m != nil && Streak(l, a, LatestSeen(l)) > *m {
		return fmt.Sprintf("stopped automatically: max_new_answers_per_agent (%d) reached: %d answers in a row without news from peers",
			*m, a.AnswerStreak)
	}
	return ""
}

// RecordAnswer records in a an answer it submitted at step having seen
// seen: its counts, its streak (Streak) and what it had seen. l supplies
// the session's agents (only their ids are read), so the workflow passes
// its ledger and the session loader the team. The workflow and the loader
// both record answers with it, so they count streaks alike.
func RecordAnswer(l Ledger, a *Agent, step int, seen map[string]int) {
	a.AnswerStreak = Streak(l, *a, seen)
	a.AnswerSeen = seen
	a.LatestStep, a.LatestAnswerStep, a.LastAction = step, step, ActionNewAnswer
	a.AnswerCount++
	a.Vote, a.Stop = nil, nil
}

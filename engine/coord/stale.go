package coord

import (
	"fmt"
	"strings"
)

// Unseen lists, in configuration order, the agents whose latest answer is
// newer than what seen records (a missing entry counts as 0). An empty result
// means nothing was missed. It is the core of the stale rules (StaleReason,
// StaleStop).
func Unseen(l Ledger, seen map[string]int) []string {
	var out []string
	for _, a := range l.Agents {
		if a.LatestAnswerStep > 0 && a.LatestAnswerStep > seen[a.ID] {
			out = append(out, a.ID)
		}
	}
	return out
}

// StaleReason says why a vote no longer counts, or "" when it is fresh.
// A vote is stale when it is missing (nil) or invalid, when its seen_steps is
// empty (a vote always follows at least one answer, so an empty record means
// the file was incomplete), when its target has no answer, or when any agent
// answered after the voter decided — the voter itself included, so a voter's
// own later answer stales its earlier vote.
func StaleReason(l Ledger, v *Vote) string {
	switch {
	case v == nil:
		return "no vote recorded"
	case v.Invalid:
		return "vote file is invalid"
	case len(v.SeenSteps) == 0:
		return "vote has no seen_steps"
	}
	if i := l.index(v.Target); i < 0 || l.Agents[i].LatestAnswerStep == 0 {
		return fmt.Sprintf("target %s has no answer", v.Target)
	}
	if unseen := Unseen(l, v.SeenSteps); len(unseen) > 0 {
		return "newer answers since the vote from " + strings.Join(unseen, ", ")
	}
	return ""
}

// Stale reports whether a vote no longer counts; see StaleReason.
func Stale(l Ledger, v *Vote) bool {
	return StaleReason(l, v) != ""
}

// StaleStop reports whether a decomposition-mode stop must be revisited
// because answers arrived that the agent had not seen when it stopped. Unlike
// a vote, a stop needs no candidate answer, so an empty seen_steps is stale
// only if some answer exists; a missing stop (nil) is always stale.
func StaleStop(l Ledger, s *Stop) bool {
	return s == nil || len(Unseen(l, s.SeenSteps)) > 0
}

// CurrentVote is the agent's vote if voting is its latest action, else nil:
// a new answer after a vote replaces it, even if Vote was left set. A nil
// result for an agent whose LastAction is a vote means the file is missing.
func CurrentVote(a Agent) *Vote {
	if a.LastAction != ActionVote {
		return nil
	}
	return a.Vote
}

// FreshVote is the agent's current vote if it still counts, else nil. A failed
// agent's vote never counts: failed agents are out of coordination.
func FreshVote(l Ledger, a Agent) *Vote {
	v := CurrentVote(a)
	if a.Failed || Stale(l, v) {
		return nil
	}
	return v
}

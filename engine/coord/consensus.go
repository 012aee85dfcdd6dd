package coord

import "fmt"

// Rule is how fresh votes turn into a winner.
type Rule string

// Consensus rules. Majority is step mode's rule (seed 000); plurality is
// MassGen's in-process rule, and also what settles a majority split once the
// re-votes are used up.
const (
	RuleMajority  Rule = "majority"
	RulePlurality Rule = "plurality"
)

// Valid reports whether r is a known rule, for configuration validation.
func (r Rule) Valid() bool {
	return r == RuleMajority || r == RulePlurality
}

// Outcome is the result of applying a rule to a ledger.
type Outcome struct {
	// Reached is true when Winner is decided.
	Reached bool `json:"reached"`
	// Winner is the real id of the winning answer's agent ("" when none).
	Winner string `json:"winner"`
	// Votes counts fresh votes per target (never nil); see Tally.
	Votes map[string]int `json:"votes"`
	// Split is true when every alive agent holds a fresh vote yet no target
	// has more than half of them. Under plurality a winner is still named.
	Split bool `json:"split"`
	// Reason explains the outcome for logs and the status view. It names real
	// ids, so it is not meant for models.
	Reason string `json:"reason"`
}

// Tally counts the fresh votes of alive agents per target. Votes for a failed
// agent's answer still count when that answer exists: the stored answer is
// intact and can still be presented, and dropping those votes would let an
// agent's crash overturn its peers' judgement. A running agent's recorded
// vote counts while it stays fresh (Decide still waits for it to finish).
func Tally(l Ledger) map[string]int {
	votes := make(map[string]int)
	for _, a := range l.Agents {
		if v := FreshVote(l, a); v != nil {
			votes[v.Target]++
		}
	}
	return votes
}

// Decide applies rule to the ledger. Both rules need every alive (non-failed)
// agent to have finished its step with a fresh vote; N is the number of alive
// agents. Majority then needs one target with more than N/2 votes (self-votes
// count); plurality takes the most-voted target, ties going to configuration
// order (the order of l.Agents). Zero alive agents never reach consensus.
func Decide(l Ledger, rule Rule) Outcome {
	o := Outcome{Votes: Tally(l)}
	if !rule.Valid() {
		o.Reason = fmt.Sprintf("unknown consensus rule %q: use %q or %q", rule, RuleMajority, RulePlurality)
		return o
	}
	alive := 0
	for _, a := range l.Agents {
		if a.Failed {
			continue
		}
		alive++
		if a.Running {
			o.Reason = fmt.Sprintf("waiting for %s to finish its step", a.ID)
			return o
		}
		if FreshVote(l, a) == nil {
			o.Reason = fmt.Sprintf("%s has no fresh vote (%s)", a.ID, whyNoFreshVote(l, a))
			return o
		}
	}
	if alive == 0 {
		o.Reason = "no alive agents: every agent failed"
		return o
	}
	leader, top := leading(l, o.Votes)
	if 2*top > alive {
		o.Reached, o.Winner = true, leader
		o.Reason = fmt.Sprintf("majority: %s holds %d of %d votes", leader, top, alive)
		return o
	}
	o.Split = true
	if rule == RulePlurality {
		o.Reached, o.Winner = true, leader
		o.Reason = fmt.Sprintf("plurality: %s holds %d of %d votes, the most (ties go to configuration order)",
			leader, top, alive)
		return o
	}
	o.Reason = fmt.Sprintf("split vote: no target holds more than %d/2 votes (top: %s with %d)", alive, leader, top)
	return o
}

// ResolveSplit applies the majority rule with bounded re-votes. revoteRound is
// how many re-votes have already been held, maxRevoteRounds the configured
// max_revote_rounds. On a full split it asks for another re-vote (voters are
// shown the tally) while revoteRound < maxRevoteRounds; after that plurality
// decides, so coordination cannot loop on a deadlock.
func ResolveSplit(l Ledger, revoteRound, maxRevoteRounds int) (needRevote bool, o Outcome) {
	o = Decide(l, RuleMajority)
	if !o.Split {
		return false, o
	}
	if revoteRound < maxRevoteRounds {
		o.Reason += fmt.Sprintf("; re-vote %d of %d", revoteRound+1, maxRevoteRounds)
		return true, o
	}
	p := Decide(l, RulePlurality)
	p.Reason = fmt.Sprintf("no majority after %d re-votes; %s", revoteRound, p.Reason)
	return false, p
}

// leading is the most-voted target and its count; the first agent in
// configuration order wins a tie. Fresh votes always target a ledger agent.
func leading(l Ledger, votes map[string]int) (string, int) {
	leader, top := "", 0
	for _, a := range l.Agents {
		if n := votes[a.ID]; n > top {
			leader, top = a.ID, n
		}
	}
	return leader, top
}

// whyNoFreshVote explains, for Outcome.Reason, why an alive agent blocks.
func whyNoFreshVote(l Ledger, a Agent) string {
	switch s := StateOf(a); s {
	case StateVoted:
		return "stale: " + StaleReason(l, a.Vote)
	default:
		return "state " + string(s)
	}
}

package coord

// RevoteCall is a re-vote a stored session calls for: its round, the
// agents that still owe a vote of it, and the tally they are shown.
type RevoteCall struct {
	// Round is the re-vote under way, 1-based; Of is max_revote_rounds.
	Round int `json:"round"`
	Of    int `json:"of"`
	// Agents owe a vote of this round (configuration order); running
	// agents are left out, they are busy.
	Agents []string `json:"agents"`
	// Tally is the fresh votes per real agent id when the round began:
	// what each alive agent voted before its re-vote of this round.
	Tally map[string]int `json:"tally"`
}

// AnonymousCount is a tally keyed by real id as models see it: anonymous
// id → votes, only targets with votes (see AnonymousTally).
func AnonymousCount(l Ledger, votes map[string]int) map[string]int {
	ids := make([]string, len(l.Agents))
	for i, a := range l.Agents {
		ids[i] = a.ID
	}
	anon := AnonymousIDs(ids)
	out := make(map[string]int)
	for _, a := range l.Agents { // configuration order, never map order
		if n := votes[a.ID]; n > 0 {
			out[anon[a.ID]] = n
		}
	}
	return out
}

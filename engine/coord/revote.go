package coord

import (
	"fmt"
	"maps"
)

// Cast is one recorded action of an agent, in step order: what a session
// stores about each step. Step mode keeps no re-vote counter, so the
// re-votes of a session are read from these (see Revotes).
type Cast struct {
	Step      int            `json:"step"`
	Action    Action         `json:"action"`
	Target    string         `json:"target,omitempty"`
	SeenSteps map[string]int `json:"seen_steps,omitempty"`
	// Invalid marks a vote file that could not be read.
	Invalid bool `json:"invalid,omitempty"`
}

// Revotes is the agent's trailing chain of votes cast on unchanged
// answers: the last vote of history, preceded by every vote before it
// that saw exactly the same answers, oldest first. A vote cast again on
// answers the agent had already voted on is a re-vote (a stale vote is
// recast only after a new answer, which changes what it saw), so the
// chain holds the vote that met the split followed by its re-votes, and
// len-1 is how many re-votes the agent cast. Nil when the latest action is
// not a valid vote.
func Revotes(history []Cast) []Cast {
	n := len(history)
	if n == 0 || !validVote(history[n-1]) {
		return nil
	}
	i := n - 1
	for i > 0 && validVote(history[i-1]) && maps.Equal(history[i-1].SeenSteps, history[i].SeenSteps) {
		i--
	}
	return history[i:]
}

func validVote(c Cast) bool {
	return c.Action == ActionVote && !c.Invalid && len(c.SeenSteps) > 0
}

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

// JudgeStored is Judge for a session known only from its stored files
// (step mode): the re-votes already held are not kept anywhere, so they
// are derived from each agent's history (Revotes). Rounds held is the
// longest re-vote chain among alive agents; while some alive agent has
// not cast its re-vote of that round, the round is still under way and
// it is owed (call.Agents). Otherwise Judge decides with that many
// re-votes held, and a new re-vote is owed by every alive agent. A verdict
// with Revote set comes with its call; otherwise call is nil. history maps
// each agent to its actions in step order.
func JudgeStored(l Ledger, o VerdictOptions, history map[string][]Cast) (Verdict, *RevoteCall) {
	if o.Decomposition || o.Rule == RulePlurality {
		return Judge(l, o, 0), nil
	}
	chains := make(map[string][]Cast, len(l.Agents))
	held := 0
	for _, a := range l.Agents {
		if a.Failed {
			continue
		}
		chains[a.ID] = Revotes(history[a.ID])
		held = max(held, len(chains[a.ID])-1)
	}
	call := &RevoteCall{Round: held, Of: o.MaxRevoteRounds, Agents: []string{}}
	if held > 0 {
		owed := false
		for _, a := range l.Agents {
			if a.Failed || len(chains[a.ID])-1 >= held {
				continue
			}
			owed = true
			if !a.Running && len(chains[a.ID]) > 0 && FreshVote(l, a) != nil {
				call.Agents = append(call.Agents, a.ID)
			}
		}
		if owed && len(call.Agents) > 0 {
			call.Tally = roundTally(l, chains, held)
			return Verdict{Revote: true, Reason: fmt.Sprintf("re-vote %d of %d under way", held, o.MaxRevoteRounds)}, call
		}
	}
	v := Judge(l, o, held)
	if !v.Revote {
		return v, nil
	}
	call.Round++
	call.Tally = Tally(l)
	for _, a := range l.Agents {
		if !a.Failed {
			call.Agents = append(call.Agents, a.ID)
		}
	}
	return v, call
}

// roundTally counts, for the re-vote round under way, what every alive
// agent voted before it: the vote at index round-1 of its chain.
func roundTally(l Ledger, chains map[string][]Cast, round int) map[string]int {
	out := map[string]int{}
	for _, a := range l.Agents {
		if c := chains[a.ID]; !a.Failed && len(c) >= round {
			out[c[round-1].Target]++
		}
	}
	return out
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

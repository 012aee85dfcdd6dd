package coord

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// replayed is a draining machine fed stored steps, as step mode replays a
// session: each action is a step launched and acted.
type replayed struct{ *Machine }

func newReplayed(r Rules, ids ...string) replayed {
	m := NewMachine(r, ids)
	m.Step(Drain{Undecided: true})
	return replayed{m}
}

func (m replayed) act(id string, action Action, target string, seen map[string]int) replayed {
	m.Step(Launched{Agent: id, Step: NextStep(*m.State.Ledger.Find(id))})
	m.Step(Acted{Launch: m.State.Launches, Action: action, Target: target, SeenSteps: seen})
	return m
}

// A 2-2 split of four agents in a stored session: every alive agent owes
// the re-vote, shown the tally of its start; an agent that cast its
// re-vote is no longer owed one; after max_revote_rounds plurality decides
// (ties by configuration order).
func TestRevoteAdvice(t *testing.T) {
	ids := []string{"a", "b", "c", "d"}
	all := map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}
	r := Rules{Verdict: VerdictOptions{Rule: RuleMajority, MaxRevoteRounds: 1}, Strategy: "winner_present"}
	split := func() replayed {
		m := newReplayed(r, ids...)
		for _, id := range ids {
			m.act(id, ActionNewAnswer, "", map[string]int{})
		}
		for id, target := range map[string]string{"a": "a", "b": "a", "c": "c", "d": "c"} {
			m.act(id, ActionVote, target, all)
		}
		return m
	}

	adv := split().Advise()
	require.Equal(t, PhaseCoordinating, adv.Phase)
	require.Equal(t, &RevoteCall{Round: 1, Of: 1, Agents: ids, Tally: map[string]int{"a": 2, "c": 2}}, adv.Revote)
	require.Equal(t, ids, adv.Relaunch)

	adv = split().act("a", ActionVote, "a", all).act("b", ActionVote, "a", all).Advise()
	require.Equal(t, []string{"c", "d"}, adv.Relaunch, "a and b cast their re-vote")
	require.Equal(t, 1, adv.Revote.Round)

	m := split()
	for _, id := range ids {
		m.act(id, ActionVote, map[string]string{"a": "a", "b": "a", "c": "c", "d": "c"}[id], all)
	}
	adv = m.Advise()
	require.Equal(t, PhaseDone, adv.Phase)
	require.Equal(t, StatusPlurality, adv.DecidedBy)
	require.Equal(t, "a", adv.Winner)
	require.False(t, adv.Consensus)
	require.Empty(t, adv.Relaunch)
}

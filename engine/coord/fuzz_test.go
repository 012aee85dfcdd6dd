package coord

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedLifecycle is seed 000's three rounds in fuzzSim's encoding (agents
// agent_c, agent_a, agent_e): answers, two lagged votes and an answer, votes.
var seedLifecycle = []byte{2, 0, 0, 0, 1, 0, 2, 5, 3, 5, 4, 0, 2, 3, 6, 3, 7, 3, 8}

func TestFuzzEncoding(t *testing.T) {
	s, _ := fuzzSim(seedLifecycle)
	o := Decide(s.l, RuleMajority)
	assert.True(t, o.Reached, o.Reason)
	assert.Equal(t, "agent_e", o.Winner)
	assert.Equal(t, map[string]int{"agent_e": 3}, o.Votes)
}

func addCorpus(f *testing.F, extra ...any) {
	corpus := [][]byte{
		{},
		{0, 0, 0, 3, 0},
		seedLifecycle,
		{2, 0, 0, 0, 1, 0, 2, 3, 0, 3, 1, 3, 2},
		{4, 0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 3, 5, 3, 11, 3, 17, 3, 23, 3, 4},
		{3, 0, 0, 0, 1, 9, 2, 3, 4, 3, 5, 8, 1, 6, 0, 7, 2, 17, 3},
		{1, 0, 0, 3, 0, 5, 7, 0, 1, 3, 1},
	}
	for _, c := range corpus {
		f.Add(append([]any{c}, extra...)...)
	}
}

// FuzzStaleMonotonic: a vote cast on what is visible now is fresh; any newer
// answer stales it, and once stale it never becomes fresh again, whatever
// happens next. Nothing but an answer stales it.
func FuzzStaleMonotonic(f *testing.F) {
	addCorpus(f, byte(0), byte(1), []byte{3, 0, 0, 1, 8, 2})
	f.Fuzz(func(t *testing.T, data []byte, voterArg, targetArg byte, more []byte) {
		s, history := fuzzSim(data)
		var candidates []string
		for _, a := range s.l.Agents {
			if a.LatestAnswerStep > 0 {
				candidates = append(candidates, a.ID)
			}
		}
		if len(candidates) == 0 {
			return
		}
		voter := s.l.Agents[int(voterArg)%len(s.l.Agents)].ID
		v := &Vote{Voter: voter, Target: candidates[int(targetArg)%len(candidates)], SeenSteps: seenNow(s.l)}
		require.False(t, Stale(s.l, v), StaleReason(s.l, v))

		answered := false
		for i := 0; i+1 < len(more); i += 2 {
			before := seenNow(s.l)
			history = play(s, more[i:i+2], history)
			answered = answered || !maps.Equal(before, seenNow(s.l))
			require.Equal(t, answered, Stale(s.l, v), "after event %d: %s", i/2, StaleReason(s.l, v))
		}
	})
}

// FuzzDecide checks the invariants of every rule on arbitrary ledgers: a
// winner always has an answer, a majority is a real majority, nothing is
// decided while an agent runs or lacks a fresh vote.
func FuzzDecide(f *testing.F) {
	addCorpus(f, byte(1))
	f.Fuzz(func(t *testing.T, data []byte, capArg byte) {
		s, _ := fuzzSim(data)
		l := s.ledger()
		tally := Tally(l)
		alive, total := 0, 0
		for _, a := range l.Agents {
			if !a.Failed {
				alive++
			}
		}
		for target, n := range tally {
			i := l.index(target)
			require.GreaterOrEqual(t, i, 0, "vote for unknown %s", target)
			require.Positive(t, l.Agents[i].LatestAnswerStep, "vote for %s without answer", target)
			require.Positive(t, n)
			total += n
		}
		require.LessOrEqual(t, total, alive)

		for _, rule := range []Rule{RuleMajority, RulePlurality} {
			o := Decide(l, rule)
			require.NotNil(t, o.Votes)
			require.Equal(t, tally, o.Votes)
			require.NotEmpty(t, o.Reason)
			if rule == RuleMajority {
				require.False(t, o.Reached && o.Split)
			} else if o.Split {
				require.True(t, o.Reached)
			}
			if !o.Reached {
				require.Empty(t, o.Winner)
				continue
			}
			i := l.index(o.Winner)
			require.GreaterOrEqual(t, i, 0)
			require.Positive(t, l.Agents[i].LatestAnswerStep, "winner %s has no answer", o.Winner)
			for _, a := range l.Agents {
				if !a.Failed {
					require.False(t, a.Running)
					require.NotNil(t, FreshVote(l, a), a.ID)
				}
				require.GreaterOrEqual(t, o.Votes[o.Winner], o.Votes[a.ID])
			}
			require.Empty(t, Relaunch(l))
			require.Equal(t, alive, total)
			if rule == RuleMajority {
				require.Greater(t, 2*o.Votes[o.Winner], alive)
			}
		}

		for round := range 3 {
			revote, o := ResolveSplit(l, round, 1)
			require.False(t, revote && round >= 1)
			require.False(t, revote && o.Reached)
			require.Equal(t, revote, o.Split && round < 1)
		}

		winner, how, err := TimeoutWinner(l, slices.Sorted(maps.Keys(seenNow(l))))
		if len(seenNow(l)) == 0 {
			require.ErrorIs(t, err, ErrNoAnswers)
		} else {
			require.NoError(t, err)
			i := l.index(winner)
			require.GreaterOrEqual(t, i, 0)
			require.Positive(t, l.Agents[i].LatestAnswerStep)
			if how == TimeoutByVotes {
				require.False(t, l.Agents[i].Failed)
				require.Positive(t, tally[winner])
			}
		}

		relaunch := Relaunch(l)
		require.NotNil(t, relaunch)
		last := -1
		for _, id := range relaunch {
			i := l.index(id)
			require.Greater(t, i, last, "relaunch must follow configuration order")
			last = i
			require.False(t, l.Agents[i].Failed || l.Agents[i].Running, id)
		}

		lim := Limits{FairnessLeadCap: intp(int(capArg % 4))}
		for _, a := range l.Agents {
			if ok, reason := CanAnswer(l, a.ID, lim); a.AnswerCount == 0 && !a.Failed {
				require.True(t, ok, "fairness blocked a first answer: %s", reason)
			}
		}
		_, err = json.Marshal(Summarize(l, verdictOf(Decide(l, RuleMajority)), PhaseCoordinating))
		require.NoError(t, err)
	})
}

// FuzzPermutation: results never depend on map construction, and under the
// majority rule not on configuration order either. Under plurality only a
// tie-break may change with the order, and it follows the order given.
func FuzzPermutation(f *testing.F) {
	addCorpus(f, []byte{3, 1, 4, 1, 5})
	f.Fuzz(func(t *testing.T, data []byte, perm []byte) {
		s, _ := fuzzSim(data)
		l := s.ledger()
		lm := rebuildMaps(l) // same order, maps rebuilt
		lp := rebuildMaps(l)
		for i := len(lp.Agents) - 1; i > 0; i-- {
			j := 0
			if len(perm) > 0 {
				j = int(perm[i%len(perm)]) % (i + 1)
			}
			lp.Agents[i], lp.Agents[j] = lp.Agents[j], lp.Agents[i]
		}

		for _, rule := range []Rule{RuleMajority, RulePlurality} {
			assert.Equal(t, Decide(l, rule), Decide(lm, rule))
		}
		assert.Equal(t, Summarize(l, verdictOf(Decide(l, RulePlurality)), PhaseDone), Summarize(lm, verdictOf(Decide(lm, RulePlurality)), PhaseDone))
		w1, h1, e1 := TimeoutWinner(l, nil)
		w2, h2, e2 := TimeoutWinner(lm, nil)
		assert.Equal(t, []any{w1, h1, e1}, []any{w2, h2, e2})

		om, pm := Decide(l, RuleMajority), Decide(lp, RuleMajority)
		assert.Equal(t, om.Reached, pm.Reached)
		assert.Equal(t, om.Winner, pm.Winner)
		assert.Equal(t, om.Split, pm.Split)
		assert.Equal(t, om.Votes, pm.Votes)
		assert.Equal(t, seenNow(l), seenNow(lp))
		assert.ElementsMatch(t, Relaunch(l), Relaunch(lp))
		sl, sp := Summarize(l, verdictOf(Decide(l, RuleMajority)), PhaseDone), Summarize(lp, verdictOf(Decide(lp, RuleMajority)), PhaseDone)
		assert.Equal(t, sl.Agents, sp.Agents)
		assert.Equal(t, sl.Winner, sp.Winner)
		lim := Limits{FairnessLeadCap: intp(1), MaxNewAnswersGlobal: intp(6), MaxNewAnswersPerAgent: intp(3)}
		for _, a := range l.Agents {
			ok1, r1 := CanAnswer(l, a.ID, lim)
			ok2, r2 := CanAnswer(lp, a.ID, lim)
			assert.Equal(t, ok1, ok2)
			assert.Equal(t, r1, r2)
		}

		ol, op := Decide(l, RulePlurality), Decide(lp, RulePlurality)
		assert.Equal(t, ol.Reached, op.Reached)
		assert.Equal(t, ol.Split, op.Split)
		assert.Equal(t, ol.Votes, op.Votes)
		if ol.Reached {
			assert.Equal(t, firstTied(l, ol.Votes), ol.Winner)
			assert.Equal(t, firstTied(lp, op.Votes), op.Winner)
		}
	})
}

// rebuildMaps copies l, rebuilding every seen_steps map by inserting keys in
// reverse sorted order.
func rebuildMaps(l Ledger) Ledger {
	out := cloneLedger(l)
	rebuild := func(m map[string]int) map[string]int {
		if m == nil {
			return nil
		}
		keys := slices.Sorted(maps.Keys(m))
		slices.Reverse(keys)
		r := make(map[string]int)
		for _, k := range keys {
			r[k] = m[k]
		}
		return r
	}
	for i := range out.Agents {
		if v := out.Agents[i].Vote; v != nil {
			v.SeenSteps = rebuild(v.SeenSteps)
		}
		if st := out.Agents[i].Stop; st != nil {
			st.SeenSteps = rebuild(st.SeenSteps)
		}
	}
	return out
}

// firstTied is the first agent in l's order among the most-voted targets.
func firstTied(l Ledger, votes map[string]int) string {
	top := slices.Max(slices.Collect(maps.Values(votes)))
	for _, a := range l.Agents {
		if votes[a.ID] == top {
			return a.ID
		}
	}
	return ""
}

// FuzzFairnessNoStall: the pre-start fairness pause never holds back a
// first answer, and whenever it holds back an agent, some other agent is
// running or can be launched, so a session with pauses always progresses.
func FuzzFairnessNoStall(f *testing.F) {
	addCorpus(f, byte(1), byte(0))
	f.Fuzz(func(t *testing.T, data []byte, capArg, limArg byte) {
		s, _ := fuzzSim(data)
		l := s.ledger()
		lim := Limits{FairnessLeadCap: intp(int(capArg % 4)), MaxStepsPerAgent: int(limArg % 8)}
		if limArg&8 != 0 {
			lim.MaxNewAnswersPerAgent = intp(1 + int(limArg>>4)%3)
		}
		if limArg&128 != 0 {
			lim.MaxNewAnswersGlobal = intp(1 + int(capArg>>2)%8)
		}
		for _, decomp := range []bool{false, true} {
			launchable, paused := false, false
			for _, id := range Relaunch(l) {
				a := *l.Find(id)
				switch {
				case StepsExhausted(a, lim):
				case Paused(l, id, lim, decomp):
					require.Positive(t, a.AnswerCount, "a first answer was paused")
					paused = true
				default:
					launchable = true
				}
			}
			if paused {
				require.True(t, launchable || AnyRunning(l), "every agent due for a step is paused and nothing runs")
			}
		}
	})
}

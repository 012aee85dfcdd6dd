package coord

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// driver feeds a Machine events decoded from fuzz bytes, the way a
// workflow would feed it activity results, and checks the invariants of
// every transition.
type driver struct {
	t *testing.T
	m *Machine
	// fencing are the fences asked for and not answered yet (launch →
	// how many).
	fencing map[int]int
	// launched are every launch decided (launch → agent), ended the
	// launches that ended in an accepted event.
	launched map[int]Launch
	ended    map[int]bool
	// steps is every step number each agent was launched with, in order.
	steps   map[string][]int
	end     *End
	decided *Verdict
	present *Present
}

func newDriver(t *testing.T, r Rules, n int) *driver {
	ids := []string{"agent_a", "agent_b", "agent_c", "agent_d"}[:n]
	d := &driver{t: t, m: NewMachine(r, ids), fencing: map[int]int{}, launched: map[int]Launch{}, ended: map[int]bool{},
		steps: map[string][]int{}}
	d.step(Tick{})
	return d
}

// step applies one event, records the decisions and checks the invariants.
func (d *driver) step(e Event) {
	t := d.t
	before := slices.Clone(d.m.State.Running)
	ds := d.m.Step(e)
	s := d.m.State
	// Every launch that left Running ended in exactly one event.
	for _, r := range before {
		if d.m.Running(r.Launch) == nil {
			require.False(t, d.ended[r.Launch], "launch %d ended twice", r.Launch)
			d.ended[r.Launch] = true
		}
	}
	for _, dec := range ds {
		switch dec := dec.(type) {
		case Launch:
			_, dup := d.launched[dec.Launch]
			require.False(t, dup, "launch number %d reused", dec.Launch)
			d.launched[dec.Launch] = dec
			prev := d.steps[dec.Agent]
			if len(prev) > 0 {
				require.Greater(t, dec.Step, prev[len(prev)-1], "%s's step numbers only grow", dec.Agent)
			}
			a := s.Ledger.Find(dec.Agent)
			require.Greater(t, dec.Step, max(a.LatestStep, a.GivenUpStep), "a step number is never reused")
			require.False(t, a.Failed, "a failed agent is never launched")
			d.steps[dec.Agent] = append(prev, dec.Step)
		case Fence:
			d.fencing[dec.Launch]++
		case Present:
			require.Nil(t, d.end, "a presentation after the end")
			d.present = &dec
		case End:
			require.Nil(t, d.end, "ended twice")
			d.end = &dec
		}
	}
	// Never two running steps of one agent, and Running is what the ledger says.
	seen := map[string]bool{}
	for _, r := range s.Running {
		require.False(t, seen[r.Agent], "two running steps of %s", r.Agent)
		seen[r.Agent] = true
		require.True(t, s.Ledger.Find(r.Agent).Running)
	}
	for _, a := range s.Ledger.Agents {
		require.Equal(t, seen[a.ID], a.Running, "%s: ledger and runs disagree", a.ID)
	}
	// A decided session stays decided: once coordination is over its
	// verdict's winner never changes.
	if s.Phase != PhaseCoordinating && s.Verdict.Winner != "" {
		if d.decided != nil && d.decided.Winner != "" {
			require.Equal(t, d.decided.Winner, s.Verdict.Winner, "the winner changed after the verdict")
		}
		v := s.Verdict
		d.decided = &v
	}
	if d.decided != nil && d.end == nil {
		require.NotEqual(t, PhaseCoordinating, s.Phase, "a decided session went back to coordinating")
	}
	// A stale vote never counts: a consensus of votes has a fresh majority.
	if s.Phase == PhasePresenting && s.Verdict.Status == StatusConsensus && !d.m.Rules.Verdict.Decomposition && !d.m.Rules.Verdict.SkipVoting {
		fresh := 0
		for _, a := range s.Ledger.Agents {
			if v := FreshVote(s.Ledger, a); v != nil && !a.Failed && v.Target == s.Verdict.Winner {
				fresh++
			}
		}
		require.Greater(t, 2*fresh, Alive(s.Ledger), "consensus on %s without a fresh majority", s.Verdict.Winner)
	}
	if d.end != nil {
		require.Empty(t, s.Running, "a session ended with steps running")
	}
}

// run plays the bytes as events until they run out or the session ends.
func (d *driver) run(data []byte) {
	next := func() int {
		if len(data) == 0 {
			return -1
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	arg := func() int { return max(next(), 0) }
	for d.end == nil {
		op := next()
		if op < 0 {
			return
		}
		s := d.m.State
		pick := func() *Run {
			if len(s.Running) == 0 {
				return nil
			}
			return &s.Running[arg()%len(s.Running)]
		}
		switch op % 12 {
		case 0, 1, 2: // an answer
			if r := pick(); r != nil {
				d.step(Acted{Launch: r.Launch, Action: ActionNewAnswer, SeenSteps: LatestSeen(s.Ledger), Usage: Usage{InputTokens: 1}})
			}
		case 3, 4, 5: // a vote, fresh or on an older view
			if r := pick(); r != nil {
				ids := s.Ledger.Agents
				target := ids[max(arg(), 0)%len(ids)].ID
				seen := LatestSeen(s.Ledger)
				if arg()%3 == 0 {
					for k := range seen {
						seen[k]--
					}
				}
				d.step(Acted{Launch: r.Launch, Action: ActionVote, Target: target, SeenSteps: seen})
			}
		case 6: // a stop
			if r := pick(); r != nil {
				d.step(Acted{Launch: r.Launch, Action: ActionStop, Status: "complete", SeenSteps: LatestSeen(s.Ledger)})
			}
		case 7: // a failure, or a turn without an action
			if r := pick(); r != nil {
				switch arg() % 3 {
				case 0:
					d.step(Failed{Launch: r.Launch, Reason: "boom"})
				case 1:
					d.step(TurnEnded{Launch: r.Launch, Overran: true, Reason: "late"})
				default:
					d.step(GivenUp{Launch: r.Launch, Reason: "superseded"})
				}
			}
		case 8: // a fence answers
			for l := range d.fencing {
				if d.fencing[l] > 0 {
					d.fencing[l]--
					d.step(FenceDone{Launch: l, Committed: arg()%2 == 0})
					break
				}
			}
		case 9:
			if s.Eval.Running != nil {
				d.step(Evaluated{OK: arg()%2 == 0})
			}
		case 10:
			if s.Phase == PhasePresenting {
				d.step(Presented{OK: arg()%3 != 0, Reason: "no"})
			}
		case 11:
			switch arg() % 8 {
			case 0:
				d.step(Timeout{})
			case 1:
				d.step(Cancel{})
			case 2:
				d.step(Drain{})
			}
		}
	}
}

// FuzzMachine drives the state machine with random event sequences under
// random rules and checks its invariants after every transition: never two
// running steps of one agent, step numbers only grow, a decided session
// stays decided, a stale vote never counts, every launched step ends in
// exactly one event.
func FuzzMachine(f *testing.F) {
	f.Add(byte(0), []byte{0, 0, 0, 0, 3, 0, 1, 0, 3, 1, 1, 0, 10, 1})
	f.Add(byte(1), []byte{0, 1, 0, 0, 6, 0, 6, 1, 6, 0, 8, 0, 10, 1})
	f.Add(byte(2), []byte{0, 0, 0, 1, 3, 0, 0, 1, 3, 1, 1, 1, 3, 0, 2, 1, 3, 1, 2, 0, 11, 0, 8, 1, 8, 0, 10, 1})
	f.Add(byte(7), []byte{7, 0, 0, 7, 0, 1, 11, 1, 8, 0, 8, 1})
	f.Fuzz(func(t *testing.T, setup byte, events []byte) {
		r := Rules{Verdict: VerdictOptions{Rule: RuleMajority, MaxRevoteRounds: 2}, Strategy: "winner_present", Fallback: StrategyWinnerReuse}
		switch setup % 4 {
		case 1:
			r.Verdict.Decomposition, r.Strategy, r.Fallback = true, "synthesize", ""
		case 2:
			r.Verdict.Rule = RulePlurality
		case 3:
			r.Verdict.SkipVoting = true
		}
		r.Restart = setup&4 != 0
		r.Rounds = setup&8 != 0
		r.ManagedEvaluator = setup&16 != 0
		if setup&32 != 0 {
			one, three := 1, 3
			r.Limits = Limits{MaxNewAnswersPerAgent: &one, MaxNewAnswersGlobal: &three, MaxStepsPerAgent: 6}
		}
		d := newDriver(t, r, 2+int(setup>>6)%3)
		d.run(events)
		if d.end == nil {
			return
		}
		switch d.end.Phase {
		case PhaseDone, PhaseTimeout:
			require.NotNil(t, d.present, "an answer without a presentation")
		case PhaseFailed, PhaseCancelled:
		default:
			t.Fatalf("ended in phase %q", d.end.Phase)
		}
	})
}

// The seed's three-agent lifecycle through the machine: answers, a vote
// that goes stale and is relaunched, consensus, presentation.
func TestMachineLifecycle(t *testing.T) {
	r := Rules{Verdict: VerdictOptions{Rule: RuleMajority, MaxRevoteRounds: 2}, Strategy: "winner_present", Fallback: StrategyWinnerReuse}
	d := newDriver(t, r, 3)
	require.Len(t, d.launched, 3, "every agent starts")
	launch := func(agent string) int {
		for _, run := range d.m.State.Running {
			if run.Agent == agent {
				return run.Launch
			}
		}
		t.Fatalf("%s is not running", agent)
		return 0
	}
	a, b, c := "agent_a", "agent_b", "agent_c"
	d.step(Acted{Launch: launch(a), Action: ActionNewAnswer, SeenSteps: map[string]int{}})
	d.step(Acted{Launch: launch(a), Action: ActionVote, Target: a, SeenSteps: map[string]int{a: 1}})
	d.step(Acted{Launch: launch(b), Action: ActionNewAnswer, SeenSteps: map[string]int{}})
	require.True(t, Stale(d.m.State.Ledger, d.m.State.Ledger.Find(a).Vote), "b's answer stales a's vote")
	require.NotZero(t, launch(a), "a stale voter is relaunched")
	require.Equal(t, []int{1, 2, 3}, d.steps[a])
	d.step(Acted{Launch: launch(c), Action: ActionNewAnswer, SeenSteps: map[string]int{}})
	all := map[string]int{a: 1, b: 1, c: 1}
	for _, id := range []string{a, b, c} {
		d.step(Acted{Launch: launch(id), Action: ActionVote, Target: c, SeenSteps: all})
	}
	require.NotNil(t, d.present)
	require.Equal(t, Present{Presenter: c, Strategy: "winner_present"}, *d.present)
	d.step(Presented{OK: true})
	require.Equal(t, &End{Phase: PhaseDone}, d.end)
	require.Equal(t, c, d.m.Status().Winner)
	require.Equal(t, StatusConsensus, d.m.Status().DecidedBy)
}

// Visible answers at launch: first-answer protection in voting, peers'
// work in decomposition, every answer once the agent has its own.
func TestMachineVisibleAnswers(t *testing.T) {
	for _, tc := range []struct {
		decomposition bool
		want          map[string]int // what b, still without an answer, sees on its relaunch
	}{
		{false, map[string]int{}},
		{true, map[string]int{"agent_a": 1}},
	} {
		r := Rules{Verdict: VerdictOptions{Rule: RuleMajority, Decomposition: tc.decomposition}, Strategy: "synthesize"}
		m := NewMachine(r, []string{"agent_a", "agent_b"})
		first := m.Step(Tick{})
		require.Len(t, first, 2)
		for _, dec := range first {
			require.Equal(t, map[string]int{}, dec.(Launch).Visible, "nothing to see yet")
		}
		launched := func(ds []Decision, agent string) Launch {
			for _, dec := range ds {
				if l, ok := dec.(Launch); ok && l.Agent == agent {
					return l
				}
			}
			t.Fatalf("%s was not launched", agent)
			return Launch{}
		}
		a := launched(m.Step(Acted{Launch: first[0].(Launch).Launch, Action: ActionNewAnswer}), "agent_a")
		require.Equal(t, map[string]int{"agent_a": 1}, a.Visible, "an agent with an answer sees every answer")
		require.Equal(t, 2, a.Step)
		b := launched(m.Step(TurnEnded{Launch: first[1].(Launch).Launch, Reason: "refused"}), "agent_b")
		require.Equal(t, tc.want, b.Visible, "decomposition %v", tc.decomposition)
		require.Equal(t, 2, b.Step, "a turn that ended gives up its number")
	}
}

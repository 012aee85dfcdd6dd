package coord

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCanAnswer(t *testing.T) {
	// a: 2 answers, b: 1, c: 0 (configuration order a, b, c).
	l := func() *sim { return newSim("a", "b", "c").answer("a").answer("a").answer("b") }
	tests := []struct {
		name   string
		l      Ledger
		agent  string
		lim    Limits
		ok     bool
		reason string
	}{
		{"no limits", l().ledger(), "a", Limits{}, true, ""},
		{"below the per-agent cap", l().ledger(), "a", Limits{MaxNewAnswersPerAgent: intp(3)}, true, ""},
		{"at the per-agent cap", l().ledger(), "a", Limits{MaxNewAnswersPerAgent: intp(2)}, false,
			"answer limit per agent reached (2 of 2)"},
		{"per-agent cap is per agent", l().ledger(), "b", Limits{MaxNewAnswersPerAgent: intp(2)}, true, ""},
		{"per-agent cap of zero", l().ledger(), "c", Limits{MaxNewAnswersPerAgent: intp(0)}, false,
			"(0 of 0)"},
		{"below the global cap", l().ledger(), "c", Limits{MaxNewAnswersGlobal: intp(4)}, true, ""},
		{"at the global cap", l().ledger(), "c", Limits{MaxNewAnswersGlobal: intp(3)}, false,
			"global answer limit reached (3 of 3)"},
		{"failed agents' answers count globally", l().fail("a").ledger(), "b",
			Limits{MaxNewAnswersGlobal: intp(3)}, false, "global"},
		{"lead below the cap", l().answer("c").ledger(), "a", Limits{FairnessLeadCap: intp(2)}, true, ""},
		{"lead at the cap", l().ledger(), "a", Limits{FairnessLeadCap: intp(2)}, false,
			"fairness lead cap reached (2 answers ahead of the slowest peer, cap 2)"},
		{"fairness never blocks a first answer", l().ledger(), "c", Limits{FairnessLeadCap: intp(0)}, true, ""},
		{"first answer with every limit on", newSim("a", "b").answer("b").answer("b").ledger(), "a",
			Limits{MaxNewAnswersPerAgent: intp(1), MaxNewAnswersGlobal: intp(5), FairnessLeadCap: intp(0)}, true, ""},
		{"cap zero blocks any lead", newSim("a", "b").answer("a").answer("b").ledger(), "a",
			Limits{FairnessLeadCap: intp(0)}, false, "cap 0"},
		{"failed peers do not hold others back", l().fail("c").ledger(), "a", Limits{FairnessLeadCap: intp(2)},
			true, ""},
		{"no alive peers", newSim("a", "b").answer("a").answer("a").fail("b").ledger(), "a",
			Limits{FairnessLeadCap: intp(1)}, true, ""},
		{"unknown agent", l().ledger(), "zed", Limits{}, false, `unknown agent "zed"`},
		{"failed agent", l().fail("b").ledger(), "b", Limits{}, false, "failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason := CanAnswer(tc.l, tc.agent, tc.lim)
			assert.Equal(t, tc.ok, ok, reason)
			if tc.ok {
				assert.Empty(t, reason)
				return
			}
			assert.Contains(t, reason, tc.reason)
			if tc.agent != "zed" {
				// Reasons go to models, which must never see real ids.
				for _, a := range tc.l.Agents {
					assert.NotContains(t, reason, `"`+a.ID+`"`)
					assert.NotContains(t, reason, " "+a.ID+" ")
				}
			}
		})
	}
}

func TestStepsExhausted(t *testing.T) {
	tests := []struct {
		steps, max int
		want       bool
	}{
		{0, 0, false},
		{100, 0, false},
		{4, 5, false},
		{5, 5, true},
		{6, 5, true},
		{0, 1, false},
		{3, -1, false},
	}
	for _, tc := range tests {
		got := StepsExhausted(Agent{LatestStep: tc.steps}, Limits{MaxStepsPerAgent: tc.max})
		assert.Equal(t, tc.want, got, "steps %d max %d", tc.steps, tc.max)
	}
}

func TestNextMode(t *testing.T) {
	one := 1
	lim := Limits{MaxNewAnswersPerAgent: &one}
	fresh := Ledger{Agents: []Agent{{ID: "a"}, {ID: "b"}}}
	capped := Ledger{Agents: []Agent{{ID: "a", AnswerCount: 1, LatestAnswerStep: 1, LatestStep: 1, LastAction: ActionNewAnswer}, {ID: "b"}}}
	zero := 0
	for _, tc := range []struct {
		name   string
		l      Ledger
		lim    Limits
		decomp bool
		want   Mode
		ok     bool
	}{
		{"first step votes or answers", fresh, lim, false, ModeVoting, true},
		{"decomposition always", capped, lim, true, ModeDecomposition, true},
		{"capped with answers is vote-only", capped, lim, false, ModeVoteOnly, true},
		{"capped with no answer anywhere waits", fresh, Limits{MaxNewAnswersGlobal: &zero}, false, ModeVoteOnly, false},
	} {
		m, ok := NextMode(tc.l, "a", tc.decomp, tc.lim)
		if m != tc.want || ok != tc.ok {
			t.Errorf("%s: NextMode = %q, %v; want %q, %v", tc.name, m, ok, tc.want, tc.ok)
		}
	}
	for _, m := range []Mode{ModeVoting, ModeVoteOnly, ModeDecomposition, ModePresent} {
		if !m.Valid() {
			t.Errorf("%q should be valid", m)
		}
	}
	if Mode("answer_only").Valid() {
		t.Error("answer_only is not a mode")
	}
}

func TestCanSubmit(t *testing.T) {
	// a answered twice in a row (no news), b once, between them.
	l := newSim("a", "b").answer("a").answer("b").answer("a").ledger()
	seen := seenNow(l)
	tests := []struct {
		name   string
		s      Submission
		lim    Limits
		ok     bool
		reason string
	}{
		{"voting: per-agent count", Submission{Agent: "a"}, Limits{MaxNewAnswersPerAgent: intp(2)}, false,
			"answer limit per agent reached (2 of 2): vote for the best answer instead"},
		{"decomposition: a streak, not a count", Submission{Agent: "a", Seen: seen, Decomposition: true},
			Limits{MaxNewAnswersPerAgent: intp(2)}, true, ""},
		{"decomposition: streak at the cap", Submission{Agent: "a", Seen: seen, Decomposition: true},
			Limits{MaxNewAnswersPerAgent: intp(1)}, false,
			"answer limit per agent reached (1 answers in a row without news from peers, limit 1): call `stop`"},
		{"decomposition: news resets the streak", Submission{Agent: "a", Seen: map[string]int{"a": 3, "b": 5}, Decomposition: true},
			Limits{MaxNewAnswersPerAgent: intp(1)}, true, ""},
		{"pending answers count globally", Submission{Agent: "b", Pending: 1}, Limits{MaxNewAnswersGlobal: intp(4)}, false,
			"global answer limit reached (4 of 4): vote"},
		{"decomposition: global says stop", Submission{Agent: "b", Decomposition: true}, Limits{MaxNewAnswersGlobal: intp(3)}, false,
			"global answer limit reached (3 of 3): call `stop`"},
		{"fairness says what to do", Submission{Agent: "a"}, Limits{FairnessLeadCap: intp(1)}, false,
			"fairness lead cap reached (1 answers ahead of the slowest peer, cap 1): vote for the best answer instead; you may answer again later"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason := CanSubmit(l, tc.s, tc.lim)
			assert.Equal(t, tc.ok, ok, reason)
			assert.Contains(t, reason, tc.reason)
		})
	}
}

func TestStreak(t *testing.T) {
	s := newSim("a", "b").answer("a").answer("a")
	assert.Equal(t, 2, s.agent("a").AnswerStreak, "two answers in a row")
	s.answer("b").answer("a")
	assert.Equal(t, 1, s.agent("a").AnswerStreak, "a peer's answer resets the streak")
	s.answer("a").answer("a")
	assert.Equal(t, 3, s.agent("a").AnswerStreak)
	a := *s.agent("a")
	assert.Equal(t, 4, Streak(s.l, a, seenNow(s.l)), "nothing new")
	assert.Equal(t, 1, Streak(s.l, a, map[string]int{"b": 9}), "news")
	assert.Equal(t, 1, Streak(s.l, Agent{ID: "b"}, nil), "a first answer")
	old := a
	old.AnswerSeen = nil // an answer stored before seen_steps
	assert.Equal(t, 1, Streak(s.l, old, seenNow(s.l)), "what it saw is unknown: any peer answer is news")
}

func TestAutoStop(t *testing.T) {
	two := newSim("a", "b").answer("a").answer("a")
	tests := []struct {
		name string
		l    Ledger
		lim  Limits
		want string
	}{
		{"below the streak cap", two.ledger(), Limits{MaxNewAnswersPerAgent: intp(3)}, ""},
		{"streak at the cap", two.ledger(), Limits{MaxNewAnswersPerAgent: intp(2)},
			"stopped automatically: max_new_answers_per_agent (2) reached: 2 answers in a row without news from peers"},
		{"a peer answered since: its next step has news", newSim("a", "b").answer("a").answer("a").answer("b").ledger(),
			Limits{MaxNewAnswersPerAgent: intp(2)}, ""},
		{"global cap", two.ledger(), Limits{MaxNewAnswersGlobal: intp(2)}, "stopped automatically: max_new_answers_global (2) reached"},
		{"no limits", two.ledger(), Limits{}, ""},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, AutoStop(tc.l, "a", tc.lim), tc.name)
	}
}

func TestPaused(t *testing.T) {
	cap1 := Limits{FairnessLeadCap: intp(1)}
	tests := []struct {
		name   string
		l      Ledger
		lim    Limits
		decomp bool
		want   bool
	}{
		{"slower peer running", newSim("a", "b").answer("a").run("b").ledger(), cap1, false, true},
		{"slower peer due for its first step", newSim("a", "b").answer("a").ledger(), cap1, false, true},
		{"slower peer voted: nobody catches up", newSim("a", "b").answer("a").vote("b", "a").ledger(), cap1, false, false},
		{"slower peer failed", newSim("a", "b").answer("a").fail("b").ledger(), cap1, false, false},
		{"slower peer capped", newSim("a", "b", "c").answer("a").answer("a").answer("b").ledger(),
			Limits{FairnessLeadCap: intp(1), MaxNewAnswersGlobal: intp(3)}, false, false},
		{"slower peer out of steps", newSim("a", "b").answer("a").answer("b").answer("a").answer("a").ledger(),
			Limits{FairnessLeadCap: intp(2), MaxStepsPerAgent: 1}, false, false},
		{"lead below the cap", newSim("a", "b").answer("a").run("b").ledger(), Limits{FairnessLeadCap: intp(2)}, false, false},
		{"equal peers never pause each other", newSim("a", "b").answer("a").answer("b").ledger(), Limits{FairnessLeadCap: intp(0)}, false, false},
		{"no fairness", newSim("a", "b").answer("a").run("b").ledger(), Limits{}, false, false},
		{"a first answer is never paused", newSim("a", "b").run("b").ledger(), Limits{FairnessLeadCap: intp(0)}, false, false},
		{"decomposition: a peer that will auto-stop holds no one back",
			newSim("a", "b").answer("a").answer("b").answer("b").answer("a").answer("a").ledger(),
			Limits{FairnessLeadCap: intp(1), MaxNewAnswersPerAgent: intp(2)}, true, false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, Paused(tc.l, "a", tc.lim, tc.decomp), tc.name)
	}
}

// In decomposition a peer that stopped said its part is done and will not
// catch up: it does not hold the others back under the fairness lead cap
// (their answers would otherwise be refused until they are dropped; the
// streak limit bounds them instead). A peer still working on its first
// step, or voting mode, still counts.
func TestFairnessIgnoresPeersThatStopped(t *testing.T) {
	cap1 := Limits{FairnessLeadCap: intp(1)}
	stopped := newSim("a", "b").stop("b").answer("a").ledger()
	ok, reason := CanSubmit(stopped, Submission{Agent: "a", Seen: seenNow(stopped), Decomposition: true}, cap1)
	assert.True(t, ok, reason)

	ok, _ = CanSubmit(stopped, Submission{Agent: "a"}, cap1)
	assert.False(t, ok, "voting mode keeps MassGen's rule")

	working := newSim("a", "b").answer("a").ledger()
	ok, _ = CanSubmit(working, Submission{Agent: "a", Seen: seenNow(working), Decomposition: true}, cap1)
	assert.False(t, ok, "b has not acted yet: it may still answer")
}

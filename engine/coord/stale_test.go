package coord

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnseen(t *testing.T) {
	l := newSim("b", "a", "c").answer("b").answer("a").answer("a").ledger()
	assert.Empty(t, Unseen(l, map[string]int{"a": 2, "b": 1}))
	assert.Empty(t, Unseen(l, map[string]int{"a": 5, "b": 9}))
	assert.Equal(t, []string{"b", "a"}, Unseen(l, nil))
	assert.Equal(t, []string{"a"}, Unseen(l, map[string]int{"a": 1, "b": 1, "c": 4}))
}

func TestStaleReason(t *testing.T) {
	base := func() *sim { return newSim("a", "b", "c").answer("a").answer("b") }
	tests := []struct {
		name  string
		build func() (Ledger, *Vote)
		want  string // substring of the reason; "" = fresh
	}{
		{"fresh", func() (Ledger, *Vote) {
			s := base().vote("c", "a")
			return s.ledger(), s.agent("c").Vote
		}, ""},
		{"self-vote is fresh", func() (Ledger, *Vote) {
			s := base().vote("a", "a")
			return s.ledger(), s.agent("a").Vote
		}, ""},
		{"missing", func() (Ledger, *Vote) { return base().ledger(), nil }, "no vote"},
		{"invalid", func() (Ledger, *Vote) {
			s := base().invalidVote("c")
			return s.ledger(), s.agent("c").Vote
		}, "invalid"},
		{"no seen_steps", func() (Ledger, *Vote) {
			s := base().voteSeen("c", "a", nil)
			return s.ledger(), s.agent("c").Vote
		}, "no seen_steps"},
		{"empty seen_steps", func() (Ledger, *Vote) {
			s := base().voteSeen("c", "a", map[string]int{})
			return s.ledger(), s.agent("c").Vote
		}, "no seen_steps"},
		{"target without answer", func() (Ledger, *Vote) {
			s := base().vote("a", "c")
			return s.ledger(), s.agent("a").Vote
		}, "target c has no answer"},
		{"unknown target", func() (Ledger, *Vote) {
			s := base().vote("a", "zed")
			return s.ledger(), s.agent("a").Vote
		}, "target zed has no answer"},
		{"peer answered after the vote", func() (Ledger, *Vote) {
			s := base().vote("c", "a").answer("b")
			return s.ledger(), s.agent("c").Vote
		}, "from b"},
		{"first answer of a peer after the vote", func() (Ledger, *Vote) {
			s := base().vote("a", "b")
			v := s.agent("a").Vote
			s.answer("c")
			return s.ledger(), v
		}, "from c"},
		{"voter's own later answer", func() (Ledger, *Vote) {
			s := base().vote("a", "b")
			v := s.agent("a").Vote
			s.answer("a")
			return s.ledger(), v
		}, "from a"},
		{"missing entry counts as zero", func() (Ledger, *Vote) {
			s := base().voteSeen("c", "a", map[string]int{"a": 1})
			return s.ledger(), s.agent("c").Vote
		}, "from b"},
		{"seen ahead of latest is fine", func() (Ledger, *Vote) {
			s := base().voteSeen("c", "a", map[string]int{"a": 7, "b": 7, "c": 7})
			return s.ledger(), s.agent("c").Vote
		}, ""},
		{"failed agent's newer answer stales", func() (Ledger, *Vote) {
			s := base().vote("c", "a").answer("b").fail("b")
			return s.ledger(), s.agent("c").Vote
		}, "from b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, v := tc.build()
			got := StaleReason(l, v)
			if tc.want == "" {
				assert.Empty(t, got)
				assert.False(t, Stale(l, v))
				return
			}
			assert.Contains(t, got, tc.want)
			assert.True(t, Stale(l, v))
		})
	}
}

func TestCurrentAndFreshVote(t *testing.T) {
	s := newSim("a", "b").answer("a").answer("b").vote("a", "b")
	l := s.ledger()
	assert.Equal(t, "b", CurrentVote(l.Agents[0]).Target)
	assert.Equal(t, "b", FreshVote(l, l.Agents[0]).Target)
	assert.Nil(t, CurrentVote(l.Agents[1]))

	// A vote left over after a later answer is not the agent's current action.
	a := l.Agents[0]
	a.LastAction = ActionNewAnswer
	assert.Nil(t, CurrentVote(a))
	assert.Nil(t, FreshVote(l, a))

	// A failed agent's vote never counts.
	l = s.fail("a").ledger()
	assert.NotNil(t, CurrentVote(l.Agents[0]))
	assert.Nil(t, FreshVote(l, l.Agents[0]))

	// A missing vote file: voted, but no vote.
	l = newSim("a").answer("a").missingVote("a").ledger()
	assert.Nil(t, FreshVote(l, l.Agents[0]))
}

func TestStaleStop(t *testing.T) {
	tests := []struct {
		name  string
		build func() (Ledger, *Stop)
		want  bool
	}{
		{"missing", func() (Ledger, *Stop) { return newSim("a").ledger(), nil }, true},
		{"fresh", func() (Ledger, *Stop) {
			s := newSim("a", "b").answer("a").answer("b").stop("a")
			return s.ledger(), s.agent("a").Stop
		}, false},
		{"empty seen_steps, no answers anywhere", func() (Ledger, *Stop) {
			s := newSim("a", "b").stopSeen("a", nil)
			return s.ledger(), s.agent("a").Stop
		}, false},
		{"empty seen_steps with answers", func() (Ledger, *Stop) {
			s := newSim("a", "b").answer("b").stopSeen("a", nil)
			return s.ledger(), s.agent("a").Stop
		}, true},
		{"peer answered after the stop", func() (Ledger, *Stop) {
			s := newSim("a", "b").answer("a").answer("b").stop("a").answer("b")
			return s.ledger(), s.agent("a").Stop
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, st := tc.build()
			assert.Equal(t, tc.want, StaleStop(l, st))
		})
	}
}

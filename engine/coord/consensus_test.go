package coord

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// threeAnswered is three agents with one answer each, in configuration order
// c, a, b (not sorted, so configuration order is visibly what breaks ties).
func threeAnswered() *sim {
	return newSim("c", "a", "b").answer("c").answer("a").answer("b")
}

func TestDecide(t *testing.T) {
	type want struct {
		reached bool
		winner  string
		split   bool
		votes   map[string]int
		reason  string // substring
	}
	tests := []struct {
		name      string
		l         Ledger
		majority  want
		plurality want
	}{
		{
			name:      "no agents",
			l:         Ledger{},
			majority:  want{votes: map[string]int{}, reason: "no alive agents"},
			plurality: want{votes: map[string]int{}, reason: "no alive agents"},
		},
		{
			name:      "all failed",
			l:         newSim("a", "b").answer("a").vote("a", "a").fail("a").fail("b").ledger(),
			majority:  want{votes: map[string]int{}, reason: "no alive agents"},
			plurality: want{votes: map[string]int{}, reason: "no alive agents"},
		},
		{
			name:      "single agent self-vote",
			l:         newSim("a").answer("a").vote("a", "a").ledger(),
			majority:  want{reached: true, winner: "a", votes: map[string]int{"a": 1}, reason: "majority"},
			plurality: want{reached: true, winner: "a", votes: map[string]int{"a": 1}, reason: "majority"},
		},
		{
			name:      "single agent only answered",
			l:         newSim("a").answer("a").ledger(),
			majority:  want{votes: map[string]int{}, reason: "a has no fresh vote (state answered)"},
			plurality: want{votes: map[string]int{}, reason: "a has no fresh vote"},
		},
		{
			name:      "unanimous self-votes count",
			l:         threeAnswered().vote("c", "b").vote("a", "b").vote("b", "b").ledger(),
			majority:  want{reached: true, winner: "b", votes: map[string]int{"b": 3}},
			plurality: want{reached: true, winner: "b", votes: map[string]int{"b": 3}},
		},
		{
			name:      "two of three is a majority",
			l:         threeAnswered().vote("c", "a").vote("a", "a").vote("b", "b").ledger(),
			majority:  want{reached: true, winner: "a", votes: map[string]int{"a": 2, "b": 1}},
			plurality: want{reached: true, winner: "a", votes: map[string]int{"a": 2, "b": 1}},
		},
		{
			name: "running agent blocks consensus",
			l:    threeAnswered().vote("c", "a").vote("a", "a").vote("b", "a").run("b").ledger(),
			majority: want{votes: map[string]int{"a": 3},
				reason: "waiting for b to finish"},
			plurality: want{votes: map[string]int{"a": 3}, reason: "waiting for b"},
		},
		{
			name:      "an answerer blocks consensus",
			l:         threeAnswered().vote("c", "a").vote("a", "a").ledger(),
			majority:  want{votes: map[string]int{"a": 2}, reason: "b has no fresh vote (state answered)"},
			plurality: want{votes: map[string]int{"a": 2}, reason: "b has no fresh vote"},
		},
		{
			name: "a stale vote blocks consensus",
			l: threeAnswered().vote("c", "a").vote("a", "a").
				voteSeen("b", "a", map[string]int{"c": 1, "a": 1}).ledger(),
			majority:  want{votes: map[string]int{"a": 2}, reason: "b has no fresh vote (stale: newer answers"},
			plurality: want{votes: map[string]int{"a": 2}, reason: "stale"},
		},
		{
			name:      "vote without seen_steps blocks consensus",
			l:         threeAnswered().vote("c", "a").vote("a", "a").voteSeen("b", "a", nil).ledger(),
			majority:  want{votes: map[string]int{"a": 2}, reason: "no seen_steps"},
			plurality: want{votes: map[string]int{"a": 2}, reason: "no seen_steps"},
		},
		{
			name:      "a stop is not a vote",
			l:         threeAnswered().vote("c", "a").vote("a", "a").stop("b").ledger(),
			majority:  want{votes: map[string]int{"a": 2}, reason: "state stopped"},
			plurality: want{votes: map[string]int{"a": 2}, reason: "state stopped"},
		},
		{
			name: "three-way split; plurality tie goes to configuration order",
			l:    threeAnswered().vote("c", "b").vote("a", "a").vote("b", "c").ledger(),
			majority: want{split: true, votes: map[string]int{"a": 1, "b": 1, "c": 1},
				reason: "split vote"},
			plurality: want{reached: true, winner: "c", split: true,
				votes: map[string]int{"a": 1, "b": 1, "c": 1}, reason: "plurality"},
		},
		{
			name: "two-two split of four",
			l: newSim("d", "c", "b", "a").answer("d").answer("c").answer("b").answer("a").
				vote("d", "a").vote("c", "a").vote("b", "b").vote("a", "b").ledger(),
			majority:  want{split: true, votes: map[string]int{"a": 2, "b": 2}},
			plurality: want{reached: true, winner: "b", split: true, votes: map[string]int{"a": 2, "b": 2}},
		},
		{
			name: "failed agent is excluded from N",
			l:    threeAnswered().vote("c", "a").vote("a", "a").fail("b").ledger(),
			majority: want{reached: true, winner: "a", votes: map[string]int{"a": 2},
				reason: "a holds 2 of 2 votes"},
			plurality: want{reached: true, winner: "a", votes: map[string]int{"a": 2}},
		},
		{
			name:     "a failed agent's vote does not count",
			l:        threeAnswered().vote("b", "b").vote("c", "a").vote("a", "b").fail("b").ledger(),
			majority: want{split: true, votes: map[string]int{"a": 1, "b": 1}},
			plurality: want{reached: true, winner: "a", split: true,
				votes: map[string]int{"a": 1, "b": 1}},
		},
		{
			name:      "votes for a failed agent's answer count",
			l:         threeAnswered().vote("c", "b").vote("a", "b").fail("b").ledger(),
			majority:  want{reached: true, winner: "b", votes: map[string]int{"b": 2}},
			plurality: want{reached: true, winner: "b", votes: map[string]int{"b": 2}},
		},
		{
			name:      "a failed agent that never answered cannot be voted for",
			l:         newSim("a", "b").answer("a").vote("a", "b").fail("b").ledger(),
			majority:  want{votes: map[string]int{}, reason: "target b has no answer"},
			plurality: want{votes: map[string]int{}, reason: "target b has no answer"},
		},
	}
	for _, tc := range tests {
		for rule, w := range map[Rule]want{RuleMajority: tc.majority, RulePlurality: tc.plurality} {
			t.Run(tc.name+"/"+string(rule), func(t *testing.T) {
				o := Decide(tc.l, rule)
				assert.Equal(t, w.reached, o.Reached, o.Reason)
				assert.Equal(t, w.winner, o.Winner)
				assert.Equal(t, w.split, o.Split)
				assert.Equal(t, w.votes, o.Votes)
				assert.Contains(t, o.Reason, w.reason)
				assert.Equal(t, w.votes, Tally(tc.l))
			})
		}
	}
}

func TestDecideUnknownRule(t *testing.T) {
	o := Decide(newSim("a").answer("a").vote("a", "a").ledger(), "unanimity")
	assert.False(t, o.Reached)
	assert.Contains(t, o.Reason, `unknown consensus rule "unanimity"`)
	assert.Equal(t, map[string]int{"a": 1}, o.Votes)
	assert.True(t, RuleMajority.Valid())
	assert.True(t, RulePlurality.Valid())
	assert.False(t, Rule("").Valid())
}

func TestResolveSplit(t *testing.T) {
	split := threeAnswered().vote("c", "b").vote("a", "a").vote("b", "c").ledger()
	twoOne := threeAnswered().vote("c", "b").vote("a", "a").vote("b", "b").ledger()
	pending := threeAnswered().vote("c", "b").ledger()

	tests := []struct {
		name          string
		l             Ledger
		round, max    int
		wantRevote    bool
		wantReached   bool
		wantWinner    string
		wantReasonHas string
	}{
		{"first split asks for a re-vote", split, 0, 2, true, false, "", "re-vote 1 of 2"},
		{"second split asks again", split, 1, 2, true, false, "", "re-vote 2 of 2"},
		{"re-votes used up: plurality decides", split, 2, 2, false, true, "c", "no majority after 2 re-votes"},
		{"no re-votes configured", split, 0, 0, false, true, "c", "no majority after 0 re-votes; plurality"},
		{"a majority needs no re-vote", twoOne, 0, 2, false, true, "b", "majority"},
		{"incomplete voting is not a split", pending, 5, 2, false, false, "", "no fresh vote"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			revote, o := ResolveSplit(tc.l, tc.round, tc.max)
			assert.Equal(t, tc.wantRevote, revote)
			assert.Equal(t, tc.wantReached, o.Reached)
			assert.Equal(t, tc.wantWinner, o.Winner)
			assert.Contains(t, o.Reason, tc.wantReasonHas)
		})
	}
}

// TestRevoteFlow is a split settled by a re-vote: after seeing the tally, one
// voter changes its mind and a majority forms without plurality.
func TestRevoteFlow(t *testing.T) {
	s := threeAnswered().vote("c", "b").vote("a", "a").vote("b", "c")
	revote, _ := ResolveSplit(s.ledger(), 0, 1)
	assert.True(t, revote)

	s.vote("c", "b").vote("a", "b").vote("b", "c")
	revote, o := ResolveSplit(s.ledger(), 1, 1)
	assert.False(t, revote)
	assert.True(t, o.Reached)
	assert.Equal(t, "b", o.Winner)
	assert.False(t, o.Split)
}

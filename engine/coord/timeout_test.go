package coord

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimeoutWinner(t *testing.T) {
	tests := []struct {
		name   string
		l      Ledger
		order  []string
		winner string
		how    string
	}{
		{"most votes win", threeAnswered().vote("c", "b").vote("a", "b").vote("b", "a").ledger(),
			[]string{"a"}, "b", TimeoutByVotes},
		{"a vote tie goes to configuration order", threeAnswered().vote("c", "b").vote("a", "a").ledger(),
			nil, "a", TimeoutByVotes},
		{"incomplete votes still count", threeAnswered().vote("a", "b").run("c").ledger(),
			nil, "b", TimeoutByVotes},
		{"stale votes do not count", threeAnswered().vote("c", "b").answer("a").ledger(),
			[]string{"c", "b"}, "b", TimeoutByNewestAnswer},
		{"votes for a failed agent are skipped", threeAnswered().vote("c", "b").vote("b", "b").
			vote("a", "a").fail("b").ledger(), nil, "a", TimeoutByVotes},
		{"no votes: newest answer", threeAnswered().ledger(),
			[]string{"c", "a", "b"}, "b", TimeoutByNewestAnswer},
		{"arrival log: the last occurrence counts", threeAnswered().answer("c").ledger(),
			[]string{"c", "a", "b", "c"}, "c", TimeoutByNewestAnswer},
		{"unlisted answers are older than listed ones", threeAnswered().ledger(),
			[]string{"a"}, "a", TimeoutByNewestAnswer},
		{"no arrival order: configuration order", threeAnswered().ledger(),
			nil, "c", TimeoutByNewestAnswer},
		{"agents without answers are ignored in the order", newSim("a", "b").answer("a").ledger(),
			[]string{"a", "b", "zed"}, "a", TimeoutByNewestAnswer},
		{"alive answers before failed ones", threeAnswered().fail("b").ledger(),
			[]string{"c", "a", "b"}, "a", TimeoutByNewestAnswer},
		{"only a failed agent's answer is left", newSim("a", "b").answer("b").fail("b").ledger(),
			nil, "b", TimeoutByNewestAnswer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			winner, how, err := TimeoutWinner(tc.l, tc.order)
			require.NoError(t, err)
			assert.Equal(t, tc.winner, winner)
			assert.Equal(t, tc.how, how)
		})
	}
}

func TestTimeoutWinnerNoAnswers(t *testing.T) {
	for _, l := range []Ledger{{}, newSim("a", "b").ledger(), newSim("a").fail("a").ledger()} {
		winner, how, err := TimeoutWinner(l, []string{"a"})
		require.ErrorIs(t, err, ErrNoAnswers)
		assert.Contains(t, err.Error(), "orchestrator_timeout_seconds")
		assert.Empty(t, winner)
		assert.Empty(t, how)
	}
}

package coord

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func votedAgent(id string, target string, seen map[string]int) Agent {
	return Agent{ID: id, LatestStep: 2, LatestAnswerStep: 1, AnswerCount: 1, LastAction: ActionVote,
		Vote: &Vote{Voter: id, Target: target, SeenSteps: seen, Step: 2}}
}

func stoppedAgent(id string, seen map[string]int) Agent {
	return Agent{ID: id, LatestStep: 2, LatestAnswerStep: 1, AnswerCount: 1, LastAction: ActionStop,
		Stop: &Stop{SeenSteps: seen, Step: 2}}
}

func TestJudge(t *testing.T) {
	seen := map[string]int{"a": 1, "b": 1, "c": 1}
	split := Ledger{Agents: []Agent{votedAgent("a", "a", seen), votedAgent("b", "b", seen), votedAgent("c", "c", seen)}}
	o := VerdictOptions{Rule: RuleMajority, MaxRevoteRounds: 2}

	v := Judge(split, o, 0)
	require.True(t, v.Revote)
	require.False(t, v.Done)
	v = Judge(split, o, o.MaxRevoteRounds)
	require.Equal(t, Verdict{Done: true, Status: StatusPlurality, Winner: "a", Reason: v.Reason}, v)
	require.True(t, v.Decided())

	o.Rule = RulePlurality
	require.Equal(t, StatusPlurality, Judge(split, o, 0).Status)
	agree := Ledger{Agents: []Agent{votedAgent("a", "b", seen), votedAgent("b", "b", seen), votedAgent("c", "c", seen)}}
	v = Judge(agree, o, 0)
	require.Equal(t, StatusConsensus, v.Status, "a majority under plurality is a consensus")
	require.Equal(t, "b", v.Winner)

	failed := Ledger{Agents: []Agent{{ID: "a", Failed: true}, {ID: "b", Failed: true}}}
	v = Judge(failed, o, 0)
	require.Equal(t, StatusFailed, v.Status)
	require.True(t, v.Done)
	require.False(t, v.Decided())
	require.False(t, Judge(Ledger{}, o, 0).Done, "no agents yet is not the end")

	o = VerdictOptions{Rule: RuleMajority, Decomposition: true}
	both := map[string]int{"a": 1, "b": 1}
	require.False(t, Judge(Ledger{Agents: []Agent{stoppedAgent("a", map[string]int{"a": 1}), stoppedAgent("b", both)}}, o, 0).Done,
		"a stale stop")
	v = Judge(Ledger{Agents: []Agent{{ID: "a", Failed: true}, stoppedAgent("b", both)}}, o, 0)
	require.Equal(t, Verdict{Done: true, Status: StatusConsensus, Winner: "b", Reason: v.Reason}, v, "first alive agent presents")
	o.Presenter = "a"
	require.Equal(t, "a", Judge(Ledger{Agents: []Agent{stoppedAgent("a", both), stoppedAgent("b", both)}}, o, 0).Winner,
		"the configured presenter")
}

func TestStalled(t *testing.T) {
	o := VerdictOptions{Rule: RuleMajority}
	answered := func(id string) Agent {
		return Agent{ID: id, LatestStep: 1, LatestAnswerStep: 1, AnswerCount: 1, LastAction: ActionNewAnswer}
	}
	l := Ledger{Agents: []Agent{answered("a"), answered("b")}}
	v := Stalled(l, o, []string{"b", "a"})
	require.Equal(t, StatusPlurality, v.Status)
	require.Equal(t, "a", v.Winner, "the newest answer")
	o.Decomposition, o.Presenter = true, "b"
	require.Equal(t, "b", Stalled(l, o, []string{"b", "a"}).Winner, "decomposition's presenter")
	v = Stalled(Ledger{Agents: []Agent{{ID: "a", LatestStep: 3}}}, o, nil)
	require.Equal(t, StatusFailed, v.Status)
	require.Contains(t, v.Reason, "max_steps_per_agent")
}

func TestPresenter(t *testing.T) {
	l := Ledger{Agents: []Agent{{ID: "a", Failed: true}, {ID: "b"}}}
	require.Equal(t, "b", Presenter(l, ""))
	require.Equal(t, "a", Presenter(l, "a"))
	require.Equal(t, "a", Presenter(Ledger{Agents: []Agent{{ID: "a", Failed: true}}}, ""), "all failed: the first agent")
	require.Equal(t, "", Presenter(Ledger{}, ""))
}

func TestAnonymousTally(t *testing.T) {
	seen := map[string]int{"zed": 1, "amy": 1}
	l := Ledger{Agents: []Agent{votedAgent("zed", "amy", seen), votedAgent("amy", "amy", seen)}}
	require.Equal(t, map[string]int{"agent1": 2}, AnonymousTally(l), "amy sorts first: agent1")
}

// Without a vote round (skip_voting, the quick synthesize path) the session
// is done once every alive agent has an answer: nobody votes, nobody is
// relaunched after its answer, and the presenter presents.
func TestJudgeSkipVoting(t *testing.T) {
	answered := func(id string) Agent {
		return Agent{ID: id, LatestStep: 1, LatestAnswerStep: 1, AnswerCount: 1, LastAction: ActionNewAnswer}
	}
	running := func(a Agent) Agent { a.Running = true; return a }
	failed := func(a Agent) Agent { a.Failed = true; return a }
	for _, tc := range []struct {
		name      string
		agents    []Agent
		presenter string
		done      bool
		winner    string
		relaunch  []string
	}{
		{name: "nobody answered yet", agents: []Agent{{ID: "a"}, {ID: "b"}}, relaunch: []string{"a", "b"}},
		{name: "one answer of two", agents: []Agent{answered("a"), {ID: "b"}}, relaunch: []string{"b"}},
		{name: "the other still runs", agents: []Agent{answered("a"), running(Agent{ID: "b"})}, relaunch: []string{}},
		{name: "an answered agent's step still runs", agents: []Agent{answered("a"), running(answered("b"))}, relaunch: []string{}},
		{name: "all answered: the first agent presents", agents: []Agent{answered("a"), answered("b")},
			done: true, winner: "a", relaunch: []string{}},
		{name: "all answered: the configured presenter", agents: []Agent{answered("a"), answered("b")}, presenter: "b",
			done: true, winner: "b", relaunch: []string{}},
		{name: "a failed agent is not waited for, nor presents", agents: []Agent{failed(Agent{ID: "a"}), answered("b")}, presenter: "a",
			done: true, winner: "b", relaunch: []string{}},
		{name: "a vote is not an answer", agents: []Agent{answered("a"), {ID: "b", LatestStep: 1, LastAction: ActionVote,
			Vote: &Vote{Voter: "b", Target: "a", SeenSteps: map[string]int{"a": 1}, Step: 1}}}, relaunch: []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Ledger{Agents: tc.agents}
			o := VerdictOptions{Rule: RuleMajority, MaxRevoteRounds: 2, SkipVoting: true, Presenter: tc.presenter}
			v := Judge(l, o, 0)
			require.Equal(t, tc.done, v.Done, v.Reason)
			require.False(t, v.Revote)
			if tc.done {
				require.Equal(t, StatusConsensus, v.Status)
				require.True(t, v.Decided())
				require.Equal(t, tc.winner, v.Winner)
			}
			require.Equal(t, tc.relaunch, RelaunchFor(l, o))
		})
	}
	// Decomposition without a stop round ends the same way.
	l := Ledger{Agents: []Agent{answered("a"), answered("b")}}
	v := Judge(l, VerdictOptions{Decomposition: true, SkipVoting: true, Presenter: "b"}, 0)
	require.Equal(t, Verdict{Done: true, Status: StatusConsensus, Winner: "b", Reason: v.Reason}, v)
	require.False(t, Judge(l, VerdictOptions{Decomposition: true}, 0).Done, "with a stop round the answers are not enough")
	require.Equal(t, []string{"a", "b"}, RelaunchFor(l, VerdictOptions{}), "with a vote round answered agents step again")
}

// A run without a vote round that stalls (an agent that cannot give its
// first answer) is presented by the presenter that has an answer.
func TestStalledSkipVoting(t *testing.T) {
	l := Ledger{Agents: []Agent{{ID: "a", LatestStep: 10}, {ID: "b", LatestStep: 1, LatestAnswerStep: 1, AnswerCount: 1, LastAction: ActionNewAnswer}}}
	o := VerdictOptions{SkipVoting: true}
	require.Equal(t, "b", Stalled(l, o, []string{"b"}).Winner)
	o.Presenter = "a"
	require.Equal(t, "b", Stalled(l, o, []string{"b"}).Winner, "the configured presenter has no answer")
	require.Equal(t, "a", NoVotePresenter(Ledger{Agents: []Agent{{ID: "a"}, {ID: "b"}}}, ""), "no answer anywhere")
}

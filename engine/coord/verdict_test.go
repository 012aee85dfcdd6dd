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

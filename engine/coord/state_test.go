package coord

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStateOf(t *testing.T) {
	tests := []struct {
		agent Agent
		want  AgentState
	}{
		{Agent{}, StateNoAction},
		{Agent{LastAction: ActionNewAnswer}, StateAnswered},
		{Agent{LastAction: ActionVote}, StateVoted},
		{Agent{LastAction: ActionStop}, StateStopped},
		{Agent{LastAction: "dance"}, StateNoAction},
		{Agent{LastAction: ActionVote, Failed: true}, StateFailed},
		{Agent{Failed: true}, StateFailed},
		{Agent{LastAction: ActionNewAnswer, Running: true}, StateAnswered},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, StateOf(tc.agent), "%+v", tc.agent)
	}
}

func TestRelaunch(t *testing.T) {
	tests := []struct {
		name string
		l    Ledger
		want []string
	}{
		{"empty ledger", Ledger{}, []string{}},
		{"no action yet, in configuration order", newSim("c", "a", "b").ledger(), []string{"c", "a", "b"}},
		{"answered agents relaunch", newSim("a", "b").answer("a").ledger(), []string{"a", "b"}},
		{"fresh voters rest",
			newSim("a", "b").answer("a").answer("b").vote("a", "b").vote("b", "b").ledger(), []string{}},
		{"stale voter relaunches",
			newSim("a", "b").answer("a").answer("b").vote("a", "b").vote("b", "b").answer("b").ledger(),
			[]string{"a", "b"}},
		{"a voter's own later answer stales every earlier vote",
			newSim("a", "b").answer("a").answer("b").vote("b", "a").vote("a", "a").answer("a").ledger(),
			[]string{"a", "b"}},
		{"missing vote file relaunches",
			newSim("a", "b").answer("a").answer("b").vote("b", "a").missingVote("a").ledger(), []string{"a"}},
		{"invalid vote relaunches",
			newSim("a", "b").answer("a").answer("b").vote("b", "a").invalidVote("a").ledger(), []string{"a"}},
		{"failed agents never relaunch",
			newSim("a", "b", "c").answer("a").answer("b").fail("b").fail("c").ledger(), []string{"a"}},
		{"running agents are busy",
			newSim("a", "b").answer("a").run("a").ledger(), []string{"b"}},
		{"fresh stop rests",
			newSim("a", "b").answer("a").answer("b").stop("a").stop("b").ledger(), []string{}},
		{"stale stop relaunches",
			newSim("a", "b").answer("a").answer("b").stop("a").answer("b").stop("b").ledger(), []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Relaunch(tc.l)
			assert.NotNil(t, got)
			assert.Equal(t, tc.want, got)
		})
	}
}

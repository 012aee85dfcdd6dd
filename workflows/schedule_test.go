package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

func answered(id string, step, count int) coord.Agent {
	return coord.Agent{ID: id, LatestStep: step, LatestAnswerStep: step, AnswerCount: count, LastAction: coord.ActionNewAnswer}
}

func voted(id string, step, answerStep, count int, target string, seen map[string]int) coord.Agent {
	return coord.Agent{ID: id, LatestStep: step, LatestAnswerStep: answerStep, AnswerCount: count, LastAction: coord.ActionVote,
		Vote: &coord.Vote{Voter: id, Target: target, SeenSteps: seen, Step: step}}
}

// launchPlan is what a launch decision says of the step.
type launchPlan struct {
	Agent    string
	Mode     coord.Mode
	Tally    map[string]int
	AutoStop string
}

// planLaunches is what the state machine launches next for a ledger (its
// running agents running), under the orchestrator's rules.
func planLaunches(l coord.Ledger, o config.Orchestrator, revote []string, tally map[string]int) []launchPlan {
	m := &coord.Machine{Rules: o.Rules(), State: coord.State{Ledger: coord.Ledger{Agents: slices.Clone(l.Agents)},
		Revote: revote, RevoteTally: tally, Phase: coord.PhaseCoordinating}}
	for i, ag := range l.Agents {
		if ag.Running {
			m.State.Running = append(m.State.Running, coord.Run{Agent: ag.ID, Step: coord.NextStep(ag), Launch: 100 + i})
		}
	}
	var out []launchPlan
	for _, d := range m.Step(coord.Tick{}) {
		if l, ok := d.(coord.Launch); ok {
			out = append(out, launchPlan{l.Agent, l.Mode, l.Tally, l.AutoStop})
		}
	}
	return out
}

func TestPlanLaunches(t *testing.T) {
	orch := func(edit func(*config.Orchestrator)) config.Orchestrator {
		o := config.DefaultOrchestrator()
		if edit != nil {
			edit(&o)
		}
		return o
	}
	running := func(ag coord.Agent) coord.Agent { ag.Running = true; return ag }
	for _, tc := range []struct {
		name   string
		l      []coord.Agent
		o      config.Orchestrator
		revote []string
		want   []launchPlan
	}{
		{"first launch: everyone answers", []coord.Agent{{ID: a}, {ID: b}}, orch(nil),
			nil, []launchPlan{{a, coord.ModeVoting, nil, ""}, {b, coord.ModeVoting, nil, ""}}},
		{"async: relaunch while a peer runs", []coord.Agent{answered(a, 1, 1), running(coord.Agent{ID: b})}, orch(nil),
			nil, []launchPlan{{a, coord.ModeVoting, nil, ""}}},
		{"rounds: barrier", []coord.Agent{answered(a, 1, 1), running(coord.Agent{ID: b})},
			orch(func(o *config.Orchestrator) { o.Scheduling = config.SchedulingRounds }), nil, nil},
		{"fresh voter stays", []coord.Agent{
			voted(a, 2, 1, 1, a, map[string]int{a: 1}), running(coord.Agent{ID: b})}, orch(nil), nil, nil},
		{"stale voter relaunched, failed agent never", []coord.Agent{
			voted(a, 2, 1, 1, a, map[string]int{a: 1}), answered(b, 1, 1), {ID: c, Failed: true}}, orch(nil),
			nil, []launchPlan{{a, coord.ModeVoting, nil, ""}, {b, coord.ModeVoting, nil, ""}}},
		{"answer limit: vote-only", []coord.Agent{answered(a, 1, 1), running(coord.Agent{ID: b})},
			orch(func(o *config.Orchestrator) { o.MaxNewAnswersPerAgent = ptr(1) }),
			nil, []launchPlan{{a, coord.ModeVoteOnly, nil, ""}}},
		{"global limit: vote-only", []coord.Agent{answered(a, 1, 1), answered(b, 1, 1)},
			orch(func(o *config.Orchestrator) { o.MaxNewAnswersGlobal = ptr(2) }),
			nil, []launchPlan{{a, coord.ModeVoteOnly, nil, ""}, {b, coord.ModeVoteOnly, nil, ""}}},
		{"fairness: the leader pauses while a slower peer is due", []coord.Agent{answered(a, 2, 2), {ID: b}},
			orch(func(o *config.Orchestrator) {
				o.FairnessLeadCapAnswers = 1
				o.MaxNewAnswersPerAgent = nil
			}),
			nil, []launchPlan{{b, coord.ModeVoting, nil, ""}}},
		{"defer voting: wait for a running peer's first answer", []coord.Agent{answered(a, 1, 1), running(coord.Agent{ID: b})},
			orch(func(o *config.Orchestrator) {
				o.MaxNewAnswersPerAgent = ptr(1)
				o.DeferVotingUntilAllAnswered = true
			}), nil, nil},
		{"defer voting: a peer that voted without answering holds no one back", []coord.Agent{
			answered(a, 1, 1), voted(b, 1, 0, 0, a, map[string]int{a: 1})},
			orch(func(o *config.Orchestrator) {
				o.MaxNewAnswersPerAgent = ptr(1)
				o.DeferVotingUntilAllAnswered = true
			}), nil, []launchPlan{{a, coord.ModeVoteOnly, nil, ""}}},
		{"max_steps_per_agent", []coord.Agent{answered(a, 3, 1), answered(b, 2, 1)},
			orch(func(o *config.Orchestrator) { o.MaxStepsPerAgent = 3 }),
			nil, []launchPlan{{b, coord.ModeVoting, nil, ""}}},
		{"decomposition", []coord.Agent{{ID: a, LatestStep: 1, LastAction: coord.ActionStop,
			Stop: &coord.Stop{SeenSteps: map[string]int{}, Step: 1}}, answered(b, 1, 1)},
			orch(func(o *config.Orchestrator) { o.CoordinationMode = config.ModeDecomposition }),
			nil, []launchPlan{{a, coord.ModeDecomposition, nil, ""}, {b, coord.ModeDecomposition, nil, ""}}},
		{"re-vote", []coord.Agent{
			voted(a, 2, 1, 1, a, map[string]int{a: 1, b: 1}), voted(b, 2, 1, 1, b, map[string]int{a: 1, b: 1})},
			orch(nil), []string{a, b},
			[]launchPlan{{a, coord.ModeVoteOnly, map[string]int{"x": 1}, ""}, {b, coord.ModeVoteOnly, map[string]int{"x": 1}, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planLaunches(coord.Ledger{Agents: tc.l}, tc.o, tc.revote, map[string]int{"x": 1})
			require.Equal(t, tc.want, got)
		})
	}
}

// The pre-start gates of seed 001: fairness pauses a leader while a
// slower peer can catch up, else it runs in voting mode (the submission
// check refuses an answer over the lead cap); decomposition limits stop an
// agent automatically.
func TestPlanLaunchesPreStartGates(t *testing.T) {
	orch := func(edit func(*config.Orchestrator)) config.Orchestrator {
		o := config.DefaultOrchestrator()
		o.MaxNewAnswersPerAgent, o.MaxNewAnswersGlobal = nil, nil
		o.FairnessLeadCapAnswers = 1
		edit(&o)
		return o
	}
	fair := orch(func(*config.Orchestrator) {})
	running := func(ag coord.Agent) coord.Agent { ag.Running = true; return ag }
	decomp := func(perAgent, global *int) config.Orchestrator {
		return orch(func(o *config.Orchestrator) {
			o.CoordinationMode = config.ModeDecomposition
			o.FairnessEnabled = false
			o.MaxNewAnswersPerAgent, o.MaxNewAnswersGlobal = perAgent, global
		})
	}
	streak := func(ag coord.Agent, n int, seen map[string]int) coord.Agent {
		ag.AnswerStreak, ag.AnswerSeen = n, seen
		return ag
	}
	for _, tc := range []struct {
		name string
		l    []coord.Agent
		o    config.Orchestrator
		want []launchPlan
	}{
		{"leader waits for a running slower peer", []coord.Agent{answered(a, 1, 1), running(coord.Agent{ID: b})}, fair, nil},
		{"nobody can catch up: the leader runs in voting mode", []coord.Agent{
			answered(a, 2, 2), voted(b, 2, 1, 1, a, map[string]int{a: 2, b: 1})}, fair,
			[]launchPlan{{a, coord.ModeVoting, nil, ""}}},
		{"a capped slower peer holds no one back", []coord.Agent{answered(a, 2, 2), answered(b, 1, 1)},
			orch(func(o *config.Orchestrator) { o.MaxNewAnswersPerAgent = ptr(2); o.MaxNewAnswersGlobal = ptr(3) }),
			[]launchPlan{{a, coord.ModeVoteOnly, nil, ""}, {b, coord.ModeVoteOnly, nil, ""}}},
		{"a failed slower peer holds no one back", []coord.Agent{answered(a, 1, 1), {ID: b, Failed: true}}, fair,
			[]launchPlan{{a, coord.ModeVoting, nil, ""}}},
		{"a first answer is never paused", []coord.Agent{{ID: a}, running(coord.Agent{ID: b})},
			orch(func(o *config.Orchestrator) { o.FairnessLeadCapAnswers = 0 }),
			[]launchPlan{{a, coord.ModeVoting, nil, ""}}},
		{"decomposition: streak at the cap without news stops", []coord.Agent{
			streak(answered(a, 2, 2), 2, map[string]int{a: 1}), running(coord.Agent{ID: b})}, decomp(ptr(2), nil),
			[]launchPlan{{a, coord.ModeDecomposition, nil, "stopped automatically: max_new_answers_per_agent (2) reached: 2 answers in a row without news from peers"}}},
		{"decomposition: news from a peer resets the streak", []coord.Agent{
			streak(answered(a, 2, 2), 2, map[string]int{a: 1}), answered(b, 1, 1)}, decomp(ptr(2), nil),
			[]launchPlan{{a, coord.ModeDecomposition, nil, ""}, {b, coord.ModeDecomposition, nil, ""}}},
		{"decomposition: the global cap stops everyone due", []coord.Agent{answered(a, 1, 1), {ID: b}}, decomp(nil, ptr(1)),
			[]launchPlan{{a, coord.ModeDecomposition, nil, "stopped automatically: max_new_answers_global (1) reached"},
				{b, coord.ModeDecomposition, nil, "stopped automatically: max_new_answers_global (1) reached"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := coord.Ledger{Agents: tc.l}
			require.Equal(t, tc.want, planLaunches(l, tc.o, nil, nil))
		})
	}
}

func TestHumanInputJSON(t *testing.T) {
	var h HumanInput
	require.NoError(t, json.Unmarshal([]byte(`"hi"`), &h))
	require.Equal(t, "hi", h.Text)
	require.NoError(t, json.Unmarshal([]byte(`{"text":"ho"}`), &h))
	require.Equal(t, "ho", h.Text)
	require.Error(t, json.Unmarshal([]byte(`42`), &h))
	require.NoError(t, validateHumanInput(HumanInput{Text: strings.Repeat("é", contract.MaxHumanInputBytes/2)}))
}

// InitSession settles the session's plan from its inputs: the config's
// defaults applied, its agents, rules and timeout.
func TestPrepareSession(t *testing.T) {
	in := contract.InitSessionInput{SessionID: "wf-1", Task: "t", Config: testConfig(a)}
	in.Config.Orchestrator.Scheduling = ""
	plan, err := contract.PrepareSession(&in)
	require.NoError(t, err)
	require.Equal(t, config.SchedulingAsync, in.Config.Orchestrator.Scheduling)
	require.Equal(t, []string{a}, plan.Agents)
	require.Equal(t, in.Config.Orchestrator.Rules(), plan.Rules)

	var decoded CoordinationInput
	require.NoError(t, json.Unmarshal([]byte(`{"task":"t","config":{"agents":[{"id":"agent_a","backend":{"model":"m"}}]},"session_id":"s"}`), &decoded))
	plan, err = contract.PrepareSession(&contract.InitSessionInput{SessionID: decoded.SessionID, Task: decoded.Task, Config: decoded.Config})
	require.NoError(t, err)
	require.Equal(t, 1800*time.Second, plan.Timeout, "absent settings take their defaults")
}

func TestPrepareSessionLimits(t *testing.T) {
	ids := make([]string, contract.MaxAgents+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("agent_%03d", i)
	}
	big := strings.Repeat("x", contract.MaxTaskBytes+1)
	huge := testConfig(a)
	huge.Agents[0].SystemMessage = strings.Repeat("y", contract.MaxConfigBytes)
	for _, tc := range []struct {
		name string
		in   contract.InitSessionInput
		want string
	}{
		{"task", contract.InitSessionInput{Task: big, Config: testConfig(a)}, "task: 1572865 bytes, at most 1572864"},
		{"agents", contract.InitSessionInput{Task: "t", Config: testConfig(ids...)}, "config.agents: 201 agents, at most 200"},
		{"config", contract.InitSessionInput{Task: "t", Config: huge}, "config and eval_criteria:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.SessionID = "wf"
			_, err := contract.PrepareSession(&in)
			require.ErrorContains(t, err, tc.want)
		})
	}
	at := contract.InitSessionInput{SessionID: "wf", Task: strings.Repeat("x", contract.MaxTaskBytes), Config: testConfig(ids[:contract.MaxAgents]...)}
	_, err := contract.PrepareSession(&at)
	require.NoError(t, err, "the limits themselves are allowed")
}

package workflows

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// A failed agent (non-retryable error, or retries used up) is dropped; the
// session completes with the others.
func TestFailedAgentSessionGoesOn(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		wantCalls int
	}{
		{"non-retryable", temporal.NewNonRetryableApplicationError("the model rejected the request", "ModelRejected", nil), 1},
		{"retries used up", errors.New("connection reset"), 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]int{a: 1, b: 1}
			h := newHarness(t, map[stepKey]scripted{
				{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute), {c, 1}: fail(tc.err),
				{a, 2}: vote(a, 2*time.Minute, seen), {b, 2}: vote(a, 3*time.Minute, seen),
			})
			h.run(input(testConfig(a, b, c)))

			r := h.result()
			require.Equal(t, coord.StatusConsensus, r.Status)
			require.Equal(t, a, r.Winner)
			require.Equal(t, map[string]int{a: 2}, r.Votes)
			require.Equal(t, tc.wantCalls, h.calls[stepKey{c, 1}])
			require.Equal(t, []string{"agent_a:1", "agent_b:1", "agent_c:1", "agent_a:2", "agent_b:2"}, pairs(h.launched()))
			require.Equal(t, coord.StateFailed, h.lastStatus().Agents[c].State)
			require.Empty(t, h.upserts, "no search attributes without SearchAttributesAvailable")
		})
	}
}

func TestAllAgentsFail(t *testing.T) {
	rejected := temporal.NewNonRetryableApplicationError("invalid API key", "ModelRejected", nil)
	h := newHarness(t, map[stepKey]scripted{{a, 1}: fail(rejected), {b, 1}: fail(rejected)})
	h.run(input(testConfig(a, b)))

	err := h.env.GetWorkflowError()
	require.Error(t, err)
	app := appError(t, err)
	require.Equal(t, "AllAgentsFailed", app.Type())
	require.True(t, app.NonRetryable())
	require.Contains(t, err.Error(), "all agents failed")
	require.Contains(t, err.Error(), "invalid API key")
	final := h.lastStatus()
	require.Equal(t, coord.PhaseFailed, final.Phase)
	require.Equal(t, coord.StateFailed, final.Agents[a].State)
	require.Equal(t, coord.StateFailed, final.Agents[b].State)
	require.Empty(t, h.presents)
}

// The orchestrator timeout cancels running steps; the most-voted answer is
// kept as is (winner_reuse).
func TestTimeoutWinnerByVotes(t *testing.T) {
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute),
		{a, 2}: vote(b, 2*time.Minute, map[string]int{a: 1, b: 1}),
		{b, 2}: vote(b, 10*time.Hour, nil),
	})
	cfg := testConfig(a, b)
	cfg.Orchestrator.OrchestratorTimeoutSeconds = 600
	h.run(input(cfg))

	r := h.result()
	require.Equal(t, coord.StatusTimeout, r.Status)
	require.Equal(t, b, r.Winner)
	require.Equal(t, "final answer by agent_b", r.FinalAnswer)
	require.Equal(t, []string{"agent_a:1", "agent_b:1", "agent_a:2", "agent_b:2"}, pairs(h.launched()))
	require.Len(t, h.presents, 1)
	require.Equal(t, string(config.FinalWinnerReuse), h.presents[0].Strategy)
	require.Equal(t, b, h.presents[0].Presenter)
	// "presenting" may be superseded by the final phase while a status write
	// is in flight (see TestSeedLifecycleRounds).
	require.Contains(t, [][]string{
		{coord.PhaseCoordinating, coord.PhasePresenting, coord.PhaseTimeout},
		{coord.PhaseCoordinating, coord.PhaseTimeout},
	}, h.phases())
	final := h.lastStatus()
	require.Equal(t, b, final.Winner)
	require.Equal(t, 1, final.Agents[b].LatestStep, "the cancelled step left nothing in the ledger")
	require.Equal(t, 10*time.Minute, h.env.Now().Sub(h.start))
}

func TestTimeoutWithoutAnswersFails(t *testing.T) {
	h := newHarness(t, map[stepKey]scripted{{a, 1}: answer(10 * time.Hour), {b, 1}: answer(10 * time.Hour)})
	cfg := testConfig(a, b)
	cfg.Orchestrator.OrchestratorTimeoutSeconds = 60
	h.run(input(cfg))

	err := h.env.GetWorkflowError()
	require.Error(t, err)
	require.Equal(t, "NoAnswers", appError(t, err).Type())
	require.Contains(t, err.Error(), "timed out before any agent submitted an answer")
	require.Equal(t, coord.PhaseFailed, h.lastStatus().Phase)
	require.Empty(t, h.presents)
}

// Cancelling the workflow cancels running steps and records the cancelled
// phase; stored answers stay.
func TestCancellation(t *testing.T) {
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(10 * time.Hour), {a, 2}: vote(a, 10*time.Hour, nil),
	})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
	h.run(input(testConfig(a, b)))

	err := h.env.GetWorkflowError()
	require.Error(t, err)
	require.True(t, temporal.IsCanceledError(err), "want a cancellation, got %v", err)
	final := h.lastStatus()
	require.Equal(t, coord.PhaseCancelled, final.Phase)
	require.Equal(t, 1, final.Agents[a].AnswerCount)
	require.Equal(t, coord.StateAnswered, final.Agents[a].State)
	require.Empty(t, h.presents)
}

// No step can be launched (max_steps_per_agent) and there is no consensus:
// the newest answer wins by plurality.
func TestStallDecidesByNewestAnswer(t *testing.T) {
	h := newHarness(t, map[stepKey]scripted{{a, 1}: answer(2 * time.Minute), {b, 1}: answer(time.Minute)})
	cfg := testConfig(a, b)
	cfg.Orchestrator.MaxStepsPerAgent = 1
	h.run(input(cfg))

	r := h.result()
	require.Equal(t, coord.StatusPlurality, r.Status)
	require.Equal(t, a, r.Winner)
	require.Equal(t, string(config.FinalWinnerPresent), h.presents[0].Strategy)
	require.Len(t, h.launched(), 2)
}

// A failing presentation falls back to the winner's stored answer.
func TestPresentFallsBackToWinnerReuse(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute),
		{a, 2}: vote(b, 2*time.Minute, seen), {b, 2}: vote(b, 3*time.Minute, seen),
	})
	h.presentErr = map[string]error{
		string(config.FinalSynthesize): temporal.NewNonRetryableApplicationError("model gone", "ModelRejected", nil),
	}
	cfg := testConfig(a, b)
	cfg.Orchestrator.FinalAnswerStrategy = config.FinalSynthesize
	h.run(input(cfg))

	r := h.result()
	require.Equal(t, coord.StatusConsensus, r.Status)
	require.Equal(t, "final answer by agent_b", r.FinalAnswer)
	require.Len(t, h.presents, 2)
	require.Equal(t, string(config.FinalWinnerReuse), h.presents[1].Strategy)
}

func TestInvalidInput(t *testing.T) {
	bad := testConfig(a)
	bad.Agents[0].Backend.Model = ""
	bad.Orchestrator.Scheduling = "lockstep"
	for _, tc := range []struct {
		name string
		in   CoordinationInput
		want []string
	}{
		{"empty task", CoordinationInput{Task: "  ", Config: testConfig(a)}, []string{"task: required"}},
		{"bad config", CoordinationInput{Task: "t", Config: bad},
			[]string{"config.agents[0].backend.model: required", `config.orchestrator.scheduling: "lockstep" is not one of`}},
		{"no agents", CoordinationInput{Task: "t"}, []string{"config.agents: at least one agent is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.run(tc.in)
			err := h.env.GetWorkflowError()
			require.Error(t, err)
			app := appError(t, err)
			require.Equal(t, "InvalidInput", app.Type())
			require.True(t, app.NonRetryable())
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			require.False(t, strings.Contains(err.Error(), "\n"), "one line, for the CLI")
			require.Empty(t, h.launched())
		})
	}
}

// Decomposition: agents stop; a stop that missed a later answer is stale and
// the agent is relaunched; then the presenter synthesizes.
func TestDecompositionStop(t *testing.T) {
	for _, tc := range []struct{ presenter, want string }{{"", a}, {b, b}} {
		t.Run("presenter "+tc.want, func(t *testing.T) {
			both := map[string]int{a: 1, b: 1}
			h := newHarness(t, map[stepKey]scripted{
				{a, 1}: answer(time.Minute), {b, 1}: answer(3 * time.Minute),
				{a, 2}: stop(time.Minute, map[string]int{a: 1}), // before b's answer: goes stale
				{a, 3}: stop(time.Minute, both), {b, 2}: stop(2*time.Minute, both),
			})
			cfg := testConfig(a, b)
			cfg.Orchestrator.CoordinationMode = config.ModeDecomposition
			cfg.Orchestrator.Presenter = tc.presenter
			h.run(input(cfg))

			r := h.result()
			require.Equal(t, coord.StatusConsensus, r.Status)
			require.Equal(t, tc.want, r.Winner)
			ls := h.launched()
			require.Equal(t, []string{"agent_a:1", "agent_b:1", "agent_a:2", "agent_a:3", "agent_b:2"}, pairs(ls))
			for _, l := range ls {
				require.Equal(t, coord.ModeDecomposition, l.Mode)
			}
			require.Equal(t, 3*time.Minute, ls[3].At)
			require.Len(t, h.presents, 1)
			require.Equal(t, tc.want, h.presents[0].Presenter)
			require.Equal(t, string(config.FinalSynthesize), h.presents[0].Strategy)
			require.Equal(t, coord.StateStopped, h.lastStatus().Agents[a].State)
		})
	}
}

// A hand-written JSON input is held to the YAML config's rules: an unknown
// key, a repeated key or an API key fails the session at once, naming the
// key (never the API key's value), before any activity runs.
func TestStrictJSONInput(t *testing.T) {
	agent := `{"id":"agent_a","backend":{"type":"openai","model":"m"}}`
	for _, tc := range []struct{ name, input, want string }{
		{"misspelled session_id", `{"task":"t","sesion_id":"s1","config":{"agents":[` + agent + `]}}`,
			`unknown key "sesion_id" at the top level (did you mean "session_id"?)`},
		{"misspelled orchestrator key", `{"task":"t","config":{"agents":[` + agent + `],"orchestrator":{"fairnes_enabled":false}}}`,
			`unknown key "fairnes_enabled" in config.orchestrator (did you mean "fairness_enabled"?)`},
		{"api_key in a backend", `{"task":"t","config":{"agents":[{"id":"agent_a","backend":{"model":"m","api_key":"sk-live-SECRET-1"}}]}}`,
			"config.agents[0].backend.api_key: API keys do not belong in the workflow input"},
		{"duplicate key", `{"task":"t","config":{"agents":[` + agent + `],"agents":[]}}`,
			"config.agents: given more than once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.env.ExecuteWorkflow(contract.CoordinationName, json.RawMessage(tc.input))
			err := h.env.GetWorkflowError()
			require.Error(t, err)
			app := appError(t, err)
			require.Equal(t, "InvalidInput", app.Type())
			require.True(t, app.NonRetryable())
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "SECRET")
			require.Zero(t, h.inits)
		})
	}
}

// The workflow's own continue-as-new input, state included, passes the
// strict decoding it goes through.
func TestCarriedInputDecodesStrictly(t *testing.T) {
	in := input(testConfig(a, b))
	in.EvalCriteria = []string{"c"}
	in.State = &CarriedState{
		Machine: coord.State{Ledger: coord.Ledger{Agents: []coord.Agent{
			{ID: a, LatestStep: 2, LatestAnswerStep: 1, AnswerCount: 1, LastAction: coord.ActionVote,
				Vote: &coord.Vote{Voter: a, Target: b, SeenSteps: map[string]int{a: 1, b: 1}}},
			{ID: b, LatestStep: 1, LatestAnswerStep: 1, AnswerCount: 1, LastAction: coord.ActionNewAnswer},
		}},
			AnswerOrder: []string{a, b}, Revote: []string{a}, RevoteTally: map[string]int{"agent1": 1}, LastError: "e",
			Phase: coord.PhaseCoordinating},
		Rules:     testConfig(a, b).Orchestrator.Rules(),
		StartedAt: time.Unix(1, 0).UTC(), Deadline: time.Unix(2, 0).UTC(), Session: "s1",
	}
	data, err := json.Marshal(in)
	require.NoError(t, err)
	var back CoordinationInput
	require.NoError(t, json.Unmarshal(data, &back))
	require.Empty(t, back.decodeErr)
	require.Equal(t, in.State, back.State)
}

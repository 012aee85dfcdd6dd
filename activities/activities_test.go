package activities

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func setup(t *testing.T, rules ...llmtest.Rule) (*Activities, *testsuite.TestActivityEnvironment, config.Config, storage.Store) {
	t.Helper()
	srv := llmtest.Start(t, rules...)
	st, err := storage.NewLocal(t.TempDir())
	require.NoError(t, err)
	cfg, err := config.Parse([]byte(`agents:
  - id: agent_a
    backend: {type: openai, model: m, base_url: http://127.0.0.1:1/v1}
  - id: agent_b
    backend: {type: openai, model: m, base_url: http://127.0.0.1:1/v1}
`), "t.yaml")
	require.NoError(t, err)
	acts := &Activities{
		Store: st,
		Models: func(_ *config.Config, a *config.Agent) (llm.Model, error) {
			return llm.New(llm.Config{Model: a.Backend.Model, BaseURL: srv.URL()}, "")
		},
		HeartbeatEvery: 50 * time.Millisecond,
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return acts, env, *cfg, st
}

// initSession creates session id for a test owner, as a workflow's first
// activity does, and returns what every later activity of it sends: the
// session's ref and the hash of its stored inputs.
func initSession(t *testing.T, acts *Activities, env *testsuite.TestActivityEnvironment, id, task string, cfg config.Config) (contract.SessionRef, string) {
	t.Helper()
	owner := contract.Owner{WorkflowID: "wf-" + id, FirstRunID: "run-1"}
	v, err := env.ExecuteActivity(acts.InitSession, contract.InitSessionInput{SessionID: id, Task: task, Config: cfg, Owner: owner,
		CreatedAt: time.Now().UTC().Format(time.RFC3339)})
	require.NoError(t, err)
	var res contract.InitSessionResult
	require.NoError(t, v.Get(&res))
	return contract.SessionRef{Owner: &owner, Location: res.Location}, res.InputsHash
}

func call(name, args string) llmtest.Rule {
	return llmtest.Call(name, args)
}

func TestAgentStepStoresAndReturnsSmallResult(t *testing.T) {
	long := strings.Repeat("The Beatles were a band from Liverpool. ", 50)
	acts, env, cfg, st := setup(t, call("new_answer", `{"content":"`+long+`"}`))
	ref, hash := initSession(t, acts, env, "s1", "t", cfg)
	v, err := env.ExecuteActivity(acts.AgentStep, contract.AgentStepInput{SessionID: "s1", Agent: "agent_a", Step: 1, Launch: 1,
		SessionRef: ref, InputsHash: hash, Mode: coord.ModeVoting, Visible: map[string]int{}})
	require.NoError(t, err)
	var res contract.AgentStepResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, coord.ActionNewAnswer, res.Action)
	require.Equal(t, "agent1.1", res.Label)
	require.Equal(t, "agents/agent_a/001/answer.json", res.Key)
	require.LessOrEqual(t, len(res.AnswerPreview), contract.PreviewChars+len("…"))
	require.True(t, strings.HasSuffix(res.AnswerPreview, "…"))

	snap, err := session.Load(context.Background(), storage.Sub(st, "s1"))
	require.NoError(t, err)
	a, _ := snap.Agent("agent_a")
	require.Equal(t, strings.TrimSpace(long), strings.TrimSpace(a.Latest().Text), "the whole answer is in storage")
	require.Equal(t, "t", snap.Info.Task)
}

func TestAgentStepErrorClassification(t *testing.T) {
	cases := []struct {
		name      string
		rule      llmtest.Rule
		retryable bool
		errType   string
		delay     time.Duration
	}{
		{"enforcement", llmtest.Text("no tools for me"), false, contract.ErrTypeEnforcement, 0},
		{"bad key", llmtest.Fail(401, "bad key"), false, contract.ErrTypeModel, 0},
		{"rate limited", llmtest.Fail(429, "slow down").RetryAfter("7"), true, contract.ErrTypeModelUnavailable, 7 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			acts, env, cfg, _ := setup(t, c.rule)
			ref, hash := initSession(t, acts, env, "s1", "t", cfg)
			_, err := env.ExecuteActivity(acts.AgentStep, contract.AgentStepInput{SessionID: "s1", Agent: "agent_a", Step: 1, Launch: 1,
				SessionRef: ref, InputsHash: hash, Mode: coord.ModeVoting, Visible: map[string]int{}})
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.Equal(t, c.errType, appErr.Type())
			require.Equal(t, !c.retryable, appErr.NonRetryable())
			require.Equal(t, c.delay, appErr.NextRetryDelay())
		})
	}
}

func TestBadSessionAndConfig(t *testing.T) {
	acts, env, cfg, _ := setup(t)
	for _, id := range []string{"", "../x", "a/../../b", "a\\b"} {
		_, err := env.ExecuteActivity(acts.AgentStep, contract.AgentStepInput{SessionID: id, Agent: "agent_a", Step: 1})
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr), id)
		require.True(t, appErr.NonRetryable(), id)
	}
	bad := cfg
	bad.Agents = append([]config.Agent(nil), cfg.Agents...)
	bad.Agents[0].ID = "Not Valid"
	_, err := env.ExecuteActivity(acts.InitSession, contract.InitSessionInput{SessionID: "s", Task: "t", Config: bad,
		Owner: contract.Owner{WorkflowID: "wf", FirstRunID: "r"}})
	require.ErrorContains(t, err, "invalid coordination input: config.")
	var invalid *temporal.ApplicationError
	require.True(t, errors.As(err, &invalid))
	require.Equal(t, contract.ErrTypeInvalidInput, invalid.Type())

	ref, hash := initSession(t, acts, env, "s", "t", cfg)
	_, err = env.ExecuteActivity(acts.AgentStep, contract.AgentStepInput{SessionID: "s", Agent: "agent_a", Step: 1, SessionRef: ref, InputsHash: hash, Mode: "answer_only"})
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr))
	require.Equal(t, contract.ErrTypeConfig, appErr.Type())
	require.True(t, appErr.NonRetryable())
	require.ErrorContains(t, err, `mode "answer_only"`)
}

func TestWinnerReusePresentNeedsNoModel(t *testing.T) {
	acts, env, cfg, st := setup(t)
	ref, hash := initSession(t, acts, env, "s1", "t", cfg)
	_, err := session.Save(context.Background(), storage.Sub(st, "s1"), session.StepOutput{Agent: "agent_b", Action: coord.ActionNewAnswer, Answer: "final text", Now: time.Now()})
	require.NoError(t, err)
	acts.Models = func(*config.Config, *config.Agent) (llm.Model, error) { return nil, errors.New("no key") }
	v, err := env.ExecuteActivity(acts.Present, contract.PresentInput{SessionID: "s1", Presenter: "agent_b", SessionRef: ref, InputsHash: hash,
		Strategy: string(config.FinalWinnerReuse)})
	require.NoError(t, err)
	var res contract.PresentResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, "final text", res.Answer)
	data, err := st.Get(context.Background(), "s1/final/answer.md")
	require.NoError(t, err)
	require.Equal(t, "final text\n", string(data))
}

func TestPreviewKeepsRunesWhole(t *testing.T) {
	s := strings.Repeat("é", contract.PreviewChars)
	p := contract.Preview(s)
	require.True(t, strings.HasSuffix(p, "…"))
	require.True(t, len(p) <= contract.PreviewChars+len("…"))
	require.NotContains(t, p, "\uFFFD")
	require.Equal(t, "short", contract.Preview("short"))
}

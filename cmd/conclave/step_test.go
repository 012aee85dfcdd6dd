package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

// agentConfig writes a one-agent config whose model name identifies the
// agent to the scripted server.
func agentConfig(t *testing.T, dir, id, baseURL string) string {
	t.Helper()
	p := filepath.Join(dir, id+".yaml")
	body := fmt.Sprintf(`agent:
  id: %s
  backend:
    type: openai
    model: model-%s
    base_url: %s
    api_key_env: STEP_TEST_KEY
`, id, id, baseURL)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// setStepKey sets the key agentConfig's agents read, and allows its
// variable as a worker's operator would: it is not a provider's.
func setStepKey(t *testing.T) {
	t.Setenv("STEP_TEST_KEY", "sk-test-not-a-secret")
	t.Setenv(envAllowKeyEnv, "STEP_TEST_KEY")
}

func call(name, args string) llmtest.Reply {
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: name, Arguments: args}}}
}

// TestStepModeSeedLifecycle drives seed 000's three rounds with `conclave
// step`, round by round, and checks `conclave session status` after each.
func TestStepModeSeedLifecycle(t *testing.T) {
	setStepKey(t)
	var round atomic.Int32
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		agent := strings.TrimPrefix(r.Model, "model-")
		switch {
		case round.Load() == 1:
			return call("new_answer", fmt.Sprintf(`{"content":"round 1 answer by %s"}`, agent))
		case round.Load() == 2 && agent == "agent_c":
			return call("new_answer", `{"content":"a much better page, round 2"}`)
		case round.Load() == 2:
			return call("vote", `{"agent_id":"agent2","reason":"agent2.1 is the most thorough"}`)
		default:
			return call("vote", `{"agent_id":"agent3.2","reason":"the round 2 page is best"}`)
		}
	}))
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	cfgs := map[string]string{}
	ids := []string{"agent_a", "agent_b", "agent_c"}
	for _, id := range ids {
		cfgs[id] = agentConfig(t, dir, id, srv.URL())
	}
	step := func(id string, alias bool) stepResult {
		t.Helper()
		args := []string{"step", "--session-dir", session, "--config", cfgs[id], "--automation", "Create a website about the Beatles."}
		if round.Load() == 1 {
			args = append(args, "--agents", strings.Join(ids, ","))
		}
		if alias {
			args[0] = "--step"
		}
		code, out, errs := runCLI(t, args...)
		require.Equal(t, 0, code, errs)
		var r stepResult
		require.NoError(t, json.Unmarshal([]byte(out), &r), out)
		return r
	}

	round.Store(1)
	for _, id := range ids {
		r := step(id, id == "agent_b")
		require.Equal(t, "new_answer", r.Action)
		require.Equal(t, 1, r.StepNumber)
	}
	s := status(t, session)
	require.Equal(t, ids, s.Relaunch)
	for _, id := range ids {
		require.Equal(t, "answered", s.Agents[id].State)
	}

	round.Store(2)
	a := step("agent_a", false)
	require.Equal(t, "vote", a.Action)
	require.Equal(t, "agent_b", a.VoteTarget)
	require.Equal(t, map[string]int{"agent_a": 1, "agent_b": 1, "agent_c": 1}, a.SeenSteps)
	step("agent_b", false)
	c := step("agent_c", false)
	require.Equal(t, "agent3.2", c.Label)
	s = status(t, session)
	require.True(t, s.Agents["agent_a"].VoteStale)
	require.True(t, s.Agents["agent_b"].VoteStale)
	require.Equal(t, ids, s.Relaunch)
	require.False(t, s.Consensus)

	round.Store(3)
	for _, id := range ids {
		r := step(id, false)
		require.Equal(t, "agent_c", r.VoteTarget)
		require.Equal(t, 3, r.StepNumber)
		require.Equal(t, 2, r.SeenSteps["agent_c"])
	}
	s = status(t, session)
	require.True(t, s.Consensus)
	require.Equal(t, "agent_c", s.Winner)
	require.Empty(t, s.Relaunch)

	// The agent saw its own earlier answer anonymized like any other.
	for _, r := range srv.Requests() {
		for _, id := range ids {
			require.NotContains(t, string(r.Body), `"`+id, "a real id reached the model")
		}
	}
	var last map[string]any
	data, err := os.ReadFile(filepath.Join(session, "agents/agent_c/last_action.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &last))
	require.Equal(t, "vote", last["action"])
	require.Equal(t, "agent_c", last["vote_target"])
	require.FileExists(t, filepath.Join(session, "agents/agent_c/002/trace.jsonl"))
}

func TestStepExitCodes(t *testing.T) {
	setStepKey(t)
	srv := llmtest.Start(t, llmtest.Text("I refuse to use tools."))
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	cfg := agentConfig(t, dir, "agent_a", srv.URL())

	code, out, errs := runCLI(t, "step", "--session-dir", session, "--config", cfg, "--agents", "agent_a", "--automation", "task")
	require.Equal(t, exitNoAction, code, errs)
	require.Empty(t, out)
	require.Contains(t, errs, "no_workflow_tool")
	require.NoFileExists(t, filepath.Join(session, "agents/agent_a/001/answer.json"))
	require.NoFileExists(t, filepath.Join(session, "agents/agent_a/last_action.json"))

	two := filepath.Join(dir, "two.yaml")
	require.NoError(t, os.WriteFile(two, []byte(`agents:
  - id: a
    backend: {type: openai, model: m}
  - id: b
    backend: {type: openai, model: m}
`), 0o644))
	code, _, errs = runCLI(t, "step", "--session-dir", session, "--config", two, "--automation", "task")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "exactly one agent")

	code, _, errs = runCLI(t, "step", "--session-dir", session, "--config", filepath.Join(dir, "missing.yaml"), "--automation", "task")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "missing.yaml")

	code, _, errs = runCLI(t, "step", "--session-dir", session, "--config", cfg, "--automation", "  ")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "--automation")

	// Without a base_url the default endpoint needs a key; none is set.
	noURL := filepath.Join(dir, "openai.yaml")
	require.NoError(t, os.WriteFile(noURL, []byte("agent:\n  id: agent_a\n  backend: {type: openai, model: m, api_key_env: STEP_TEST_KEY}\n"), 0o644))
	t.Setenv("STEP_TEST_KEY", "")
	code, _, errs = runCLI(t, "step", "--session-dir", session, "--config", noURL, "--automation", "task")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "STEP_TEST_KEY")
}

// Step mode applies the worker's egress rule: a config cannot have the
// model's key read from an infrastructure variable, a variable nobody
// allowed, or sent to a host outside the allowed list.
func TestStepEgress(t *testing.T) {
	const secret = "aws-secret-not-for-models"
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("OTHER_TEST_KEY", secret)
	t.Setenv("STEP_TEST_KEY", "sk-test-not-a-secret")
	srv := llmtest.Start(t, llmtest.Text("no tools"))
	dir := t.TempDir()
	write := func(name, env string) string {
		p := filepath.Join(dir, name+".yaml")
		body := fmt.Sprintf("agent:\n  id: agent_a\n  backend: {type: openai, model: m, base_url: %s, api_key_env: %s}\n", srv.URL(), env)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	for _, c := range []struct{ name, env, allowKeys, allowHosts, want string }{
		{"infrastructure", "AWS_SECRET_ACCESS_KEY", "", "", "AWS_SECRET_ACCESS_KEY is a worker's infrastructure variable (AWS_*)"},
		{"not allowed", "OTHER_TEST_KEY", "STEP_TEST_KEY", "", "--allow-key-env OTHER_TEST_KEY"},
		{"host not allowed", "STEP_TEST_KEY", "STEP_TEST_KEY", "api.openai.com", "model host 127.0.0.1:"},
		{"infrastructure allowed by env", "STEP_TEST_KEY", "AWS_SECRET_ACCESS_KEY", "", "AWS_* is the worker's infrastructure"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(envAllowKeyEnv, c.allowKeys)
			t.Setenv(envAllowModelHosts, c.allowHosts)
			code, _, errs := runCLI(t, "step", "--session-dir", filepath.Join(dir, "s"), "--config", write(c.name, c.env), "--automation", "task")
			require.Equal(t, 1, code, errs)
			require.Contains(t, errs, c.want)
			require.NotContains(t, errs, secret)
		})
	}
	require.Empty(t, srv.Requests(), "a refused backend must not be called")
}

// A session a Coordination workflow owns is the workflow's: `conclave step`
// refuses it before any model call, running or ended, so nothing is written
// beside the steps the workflow scheduled and decided.
func TestStepRefusesAWorkflowsSession(t *testing.T) {
	setStepKey(t)
	srv := llmtest.Start(t, llmtest.Call("vote", `{"agent_id":"agent1","reason":"late"}`))
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	require.NoError(t, os.MkdirAll(filepath.Join(session, "agents/agent_a/001"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(session, "owner.json"), []byte(`{"workflow_id":"conclave-42","first_run_id":"r","inputs_hash":"sha256:x"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(session, "agents/agent_a/001/answer.json"), []byte(`{"agent_id":"agent_a","answer":"x","timestamp":"2026-03-20T22:32:03Z"}`), 0o644))
	cfg := agentConfig(t, dir, "agent_a", srv.URL())
	code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", cfg, "--agents", "agent_a", "--automation", "task")
	require.Equal(t, 1, code, errs)
	require.Contains(t, errs, `belongs to the Coordination workflow "conclave-42"`)
	require.Zero(t, srv.Count(), "no model call")
	require.NoDirExists(t, filepath.Join(session, "agents/agent_a/002"))
}

//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
)

// TestMassGenConfigRuns runs a session from a config written the way
// MassGen's examples are (backend types claude, gemini, vllm and openai, ids
// with dots and capitals, ui, timeout_settings, nested coordination
// settings, provider tools) with MassGen's command line:
// `conclave --config x.yaml --automation "question"`. Every base_url points
// at the scripted model, which records the request bodies: the backend
// parameters must arrive as the provider expects them.
func TestMassGenConfigRuns(t *testing.T) {
	bin := conclaveBinary(t)
	server := testenv.StartTemporal(t)
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		switch {
		case presenting(r):
			return call("new_answer", map[string]string{"content": "FINAL from " + agentOf(r.Model)})
		case r.HasTool("vote") && r.Contains("answer of "):
			return call("vote", map[string]string{"agent_id": "agent1", "reason": "it is complete"})
		default:
			return call("new_answer", map[string]string{"content": "answer of " + agentOf(r.Model)})
		}
	}))

	dir := t.TempDir()
	// The weather server is the local stand-in, defined in the config as
	// MassGen does: a developer's worker that allows inline servers.
	startWorker(t, bin, server.HostPort, filepath.Join(dir, "sessions"), "--allow-inline-mcp-servers")
	cfg := filepath.Join(dir, "massgen.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`agents:
  - id: "claude4.5"
    backend:
      type: "claude"
      model: "m-claude4.5"
      base_url: "`+srv.URL()+`"
      temperature: 0.3
      reasoning:
        effort: "low"
      thinking:
        type: "enabled"
        budget_tokens: 2048
      cwd: "workspace1"
    system_message: "You are a careful reviewer."
  - id: "gemini2.5flash"
    backend:
      type: "gemini"
      model: "m-gemini2.5flash"
      base_url: "`+srv.URL()+`"
      top_p: 0.8
      enable_web_search: true
  - id: "Qwen3-4b"
    backend:
      type: "vllm"
      model: "m-Qwen3-4b"
      base_url: "`+srv.URL()+`"
      top_k: 20
      chat_template_kwargs:
        enable_thinking: false
  - id: "gpt5nano"
    backend:
      type: "openai"
      model: "m-gpt5nano"
      base_url: "`+srv.URL()+`"
      text:
        verbosity: "low"
      reasoning:
        effort: "minimal"
        summary: "auto"
      mcp_servers:
        - name: "weather"
          type: "stdio"
          command: "`+bin+`"
          args: ["tool-server"]
orchestrator:
  snapshot_storage: "snapshots"
  agent_temporary_workspace: "temp_workspaces"
  coordination:
    update_mode: "inject"
    max_new_answers_per_agent: 1
timeout_settings:
  orchestrator_timeout_seconds: 300
ui:
  display_type: "rich_terminal"
  logging_enabled: true
`), 0o644))

	cmd := exec.Command(bin, "--config", cfg, "--automation", "--id", "massgen-1", "--poll", "100ms", "Why do durable workflows help agents?")
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+server.HostPort)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "SESSION: massgen-1\n")
	assert.Contains(t, out, "QUESTION: Why do durable workflows help agents?\n")
	assert.Contains(t, out, "\nPROGRESS {")
	assert.Contains(t, out, "\nWINNER: Qwen3-4b\n")
	assert.Contains(t, out, "ANSWER_FILE: "+filepath.Join(dir, "sessions", "massgen-1", "final", "answer.md")+"\n")
	assert.Contains(t, out, "ANSWER_PREVIEW: FINAL from Qwen3-4b\n")
	assert.Contains(t, out, "\nCOMPLETED: 4 agents, ")
	assert.Contains(t, out, `RESULT {"status":"consensus","winner":"Qwen3-4b"`)
	assert.Contains(t, stderr.String(), "warning: agents[1].backend.enable_web_search")
	assert.NotContains(t, stderr.String(), "backend.mcp_servers", "MCP servers are started, not ignored")
	assert.Contains(t, stderr.String(), "warning: agents[0].backend.reasoning: Anthropic (OpenAI SDK compatibility) ignores reasoning_effort")
	_, final, ok := strings.Cut(out, "STATUS_JSON:\n")
	require.True(t, ok, out)
	var status struct {
		Phase  string                     `json:"phase"`
		Winner string                     `json:"winner"`
		Agents map[string]json.RawMessage `json:"agents"`
	}
	require.NoError(t, json.Unmarshal([]byte(final), &status), final)
	assert.Equal(t, "done", status.Phase)
	assert.Len(t, status.Agents, 4)

	// What each provider received, from the bodies on the wire.
	want := map[string]map[string]any{
		"claude4.5":      {"temperature": 0.3, "thinking": map[string]any{"type": "enabled", "budget_tokens": 2048.0}},
		"gemini2.5flash": {"top_p": 0.8},
		"Qwen3-4b":       {"top_k": 20.0, "chat_template_kwargs": map[string]any{"enable_thinking": false}},
		"gpt5nano":       {"verbosity": "low", "reasoning_effort": "minimal"},
	}
	seen := map[string]int{}
	for _, r := range srv.Requests() {
		agent := agentOf(r.Model)
		var body map[string]any
		require.NoError(t, json.Unmarshal(r.Body, &body))
		for k, v := range want[agent] {
			assert.Equal(t, v, body[k], "%s: %s", agent, k)
		}
		for _, k := range []string{"enable_web_search", "mcp_servers", "cwd", "summary"} {
			assert.NotContains(t, body, k, agent)
		}
		if agent == "claude4.5" {
			assert.NotContains(t, body, "reasoning_effort", "Anthropic ignores it; it is reported instead")
		}
		if agent == "gpt5nano" {
			assert.True(t, r.HasTool("mcp__weather__get_weather"), "the stand-in's tools are offered")
		}
		seen[agent]++
	}
	for agent := range want {
		assert.Positive(t, seen[agent], "no request from %s", agent)
	}
}

// presenting tells the presenter's call: the marker is in a system message.
func presenting(r llmtest.Request) bool {
	for _, m := range r.Messages {
		if m.Role == "system" && strings.Contains(m.Content, presentMark) {
			return true
		}
	}
	return false
}

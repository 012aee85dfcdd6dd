package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRefusesLoopholes(t *testing.T) {
	backend := func(lines ...string) string {
		return "agents:\n  - id: a\n    backend:\n      model: m\n      " + strings.Join(lines, "\n      ") + "\n"
	}
	tests := []struct {
		name string
		yaml string
		want []string
		deny string
	}{
		{"extra_body temperature", backend("temperature: 0.2", "extra_body: {temperature: 1.9}"), []string{"config.yaml:6: agents[0].backend.extra_body.temperature: set backend.temperature instead"}, ""},
		{"extra_body max_tokens", backend("extra_body:", "  max_tokens: 7", "  max_completion_tokens: 9"), []string{"config.yaml:6: agents[0].backend.extra_body.max_tokens: set backend.max_tokens instead", "extra_body.max_completion_tokens: set backend.max_tokens instead"}, ""},
		{"extra_body top_p and reasoning", backend("extra_body: {Top_P: 0.1, reasoning_effort: high, verbosity: low}"), []string{`extra_body["Top_P"]: set backend.top_p instead`, "extra_body.reasoning_effort: set backend.reasoning.effort instead", "extra_body.verbosity: set backend.text.verbosity instead"}, ""},
		{"extra_body model variants", backend(`extra_body: {Model: x, " model": y, MESSAGES: []}`), []string{`extra_body["Model"]: model is a request field Conclave sets`, `extra_body[" model"]: model is a request field`, `extra_body["MESSAGES"]: messages is a request field`}, ""},
		{"extra_body functions", backend("extra_body: {functions: [], function_call: auto, parallel_tool_calls: true, Tool-Choice: none}"), []string{"extra_body.functions: functions is a request field", "extra_body.function_call:", "extra_body.parallel_tool_calls:", `extra_body["Tool-Choice"]: tool_choice is a request field`}, ""},
		{"max_tokens fraction", backend("max_tokens: 1.5"), []string{`config.yaml:5: agents[0].backend.max_tokens: expected a whole number, got "1.5"`}, ""},
		{"orchestrator fraction", agentA + "orchestrator: {max_new_answers_global: 2.5}\n", []string{`orchestrator.max_new_answers_global: expected a whole number, got "2.5"`}, ""},
		{"API_KEY", backend("API_KEY: sk-hidden1"), []string{`config.yaml:5: agents[0].backend["API_KEY"]: API keys do not belong in the config`}, "sk-hidden1"},
		{"api-key", backend("api-key: sk-hidden1"), []string{`agents[0].backend["api-key"]: API keys do not belong`}, "sk-hidden1"},
		{"apikey, x_api_key", backend("apikey: sk-hidden1", "x_api_key: sk-hidden1"), []string{"backend.apikey: API keys", "backend.x_api_key: API keys"}, "sk-hidden1"},
		{"token, password, secret_key", backend("token: sk-hidden1", "password: sk-hidden1", "secret_key: sk-hidden1", "access_token: sk-hidden1"), []string{"backend.token: API keys", "backend.password: API keys", "backend.secret_key: API keys", "backend.access_token: API keys"}, "sk-hidden1"},
		{"Authorization header", backend(`headers: {Authorization: "Bearer sk-hidden1"}`), []string{`agents[0].backend.headers["Authorization"]: API keys do not belong`}, "sk-hidden1"},
		{"secret in extra_body", backend("extra_body: {search: {Secret: sk-hidden1}}"), []string{`extra_body.search["Secret"]: API keys do not belong`}, "sk-hidden1"},
		{"key in base_url query", backend("type: chatcompletion", "base_url: https://llm.example.com/v1?key=sk-hidden1"), []string{"config.yaml:6: agents[0].backend.base_url: must not carry a key in its query (key=…)"}, "sk-hidden1"},
		{"api_key in base_url query", backend("type: chatcompletion", "base_url: https://llm.example.com/v1?API_KEY=sk-hidden1&x=1"), []string{"base_url: must not carry a key in its query (API_KEY=…)"}, "sk-hidden1"},
		{"token in base_url query", backend("type: chatcompletion", "base_url: https://llm.example.com/v1?token=sk-hidden1"), []string{"must not carry a key in its query (token=…)"}, "sk-hidden1"},
		{"too many agents", manyAgents(MaxAgents + 1), []string{fmt.Sprintf("agents: %d agents, at most %d", MaxAgents+1, MaxAgents)}, ""},
		{"config too large as JSON", "agent:\n  id: a\n  backend: {model: m}\n  system_message: " + strings.Repeat("x", MaxConfigJSONBytes) + "\n", []string{"config: ", "bytes as JSON, at most 262144"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "config.yaml")
			require.Error(t, err)
			assert.Nil(t, c)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			if tt.deny != "" {
				assert.NotContains(t, err.Error(), tt.deny, "the error must not echo a secret")
			}
		})
	}
}

func manyAgents(n int) string {
	var b strings.Builder
	b.WriteString("agents:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: a%d, backend: {model: m}}\n", i)
	}
	return b.String()
}

func TestParseAcceptsNearMisses(t *testing.T) {
	c, err := Parse([]byte(manyAgents(MaxAgents)+`prices:
  token: {input: 1, output: 2}
`), "config.yaml")
	require.NoError(t, err)
	assert.Len(t, c.Agents, MaxAgents)

	c, err = Parse([]byte(`agent:
  id: a
  backend:
    model: m
    max_tokens: 4.0
    base_url: https://llm.example.com/v1?api-version=2024-10-21
    extra_body: {top_k: 20, max_tokens_hint: 3, tokenizer: x}
`), "config.yaml")
	require.NoError(t, err)
	assert.Equal(t, 4, *c.Agents[0].Backend.MaxTokens)
}

// A repeated key leaves its mapping undecoded; only the repeat is reported,
// not the settings that therefore look missing.
func TestParseDuplicateKeyOnly(t *testing.T) {
	_, err := Parse([]byte("agents:\n  - id: a\n    backend: {model: m}\n    backend: {model: m}\n"), "config.yaml")
	require.Error(t, err)
	assert.Equal(t, `config.yaml:4: mapping key "backend" already defined at line 3`, err.Error())
}

func TestLoadLimits(t *testing.T) {
	_, err := Load(os.DevNull)
	require.ErrorContains(t, err, "not a regular file")

	_, err = Load(t.TempDir())
	require.ErrorContains(t, err, "not a regular file")

	path := filepath.Join(t.TempDir(), "big.yaml")
	big := agentA + "# " + strings.Repeat("x", MaxConfigFileBytes) + "\n"
	require.NoError(t, os.WriteFile(path, []byte(big), 0o600))
	_, err = Load(path)
	require.ErrorContains(t, err, "larger than 1048576 bytes (1024 KiB)")
}

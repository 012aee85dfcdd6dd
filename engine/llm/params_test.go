package llm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

func TestParamsReachTheRequestBody(t *testing.T) {
	topP := 0.9
	tests := []struct {
		name   string
		params Params
		want   map[string]any
		absent []string
	}{
		{"none", Params{}, map[string]any{}, []string{"top_p", "reasoning_effort", "verbosity"}},
		{"sampling and reasoning", Params{TopP: &topP, ReasoningEffort: "high", Verbosity: "low"},
			map[string]any{"top_p": 0.9, "reasoning_effort": "high", "verbosity": "low"}, nil},
		{"extra body", Params{ExtraBody: map[string]any{"top_k": 20.0, "chat_template_kwargs": map[string]any{"enable_thinking": false}}},
			map[string]any{"top_k": 20.0, "chat_template_kwargs": map[string]any{"enable_thinking": false}}, []string{"top_p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.Start(t, llmtest.Text("ok"))
			m, err := New(Config{Model: "m", BaseURL: s.URL(), Params: tt.params}, "")
			require.NoError(t, err)
			temp := 0.4
			_, err = m.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}, Temperature: &temp})
			require.NoError(t, err)
			var body map[string]any
			require.NoError(t, json.Unmarshal(s.Requests()[0].Body, &body))
			assert.Equal(t, 0.4, body["temperature"])
			assert.Equal(t, true, body["stream"], "extra fields never replace Conclave's own")
			for k, v := range tt.want {
				assert.Equal(t, v, body[k], k)
			}
			for _, k := range tt.absent {
				assert.NotContains(t, body, k)
			}
		})
	}
}

func TestKeyRequiredNamesTheVariable(t *testing.T) {
	getenv := func(string) string { return "" }
	_, err := NewFromEnv(Config{Model: "gemini-2.5-flash", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai/", APIKeyEnv: "GEMINI_API_KEY", KeyRequired: true}, getenv)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GEMINI_API_KEY is empty or unset")

	m, err := NewFromEnv(Config{Model: "qwen", BaseURL: "http://localhost:8000/v1", APIKeyEnv: "VLLM_API_KEY"}, getenv)
	require.NoError(t, err, "a local server needs no key")
	assert.True(t, m.noKey)
}

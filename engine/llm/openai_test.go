package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testKey = "sk-test-4f9a7c1e0b"

func newModel(t *testing.T, s *llmtest.Server, prices Prices) *OpenAI {
	t.Helper()
	m, err := New(Config{Model: "gpt-test", BaseURL: s.URL(), APIKeyEnv: "TEST_LLM_KEY", Prices: prices}, testKey)
	require.NoError(t, err)
	return m
}

var voteTool = Tool{Name: "vote", Description: "vote for an answer", Parameters: map[string]any{
	"type":       "object",
	"properties": map[string]any{"agent_id": map[string]any{"type": "string"}},
}}

func TestCompleteTextWithUsageAndCost(t *testing.T) {
	s := llmtest.Start(t, llmtest.Text("The answer is 4."))
	m := newModel(t, s, Prices{"gpt-test": {Input: 2.5, Output: 10}})
	temp := 0.2
	res, err := m.Complete(context.Background(), Request{
		Messages:    []Message{{Role: RoleSystem, Content: "You are terse."}, {Role: RoleUser, Content: "What is 2+2?"}},
		Temperature: &temp,
	})
	require.NoError(t, err)
	assert.Equal(t, Message{Role: RoleAssistant, Content: "The answer is 4."}, res.Message)
	assert.Equal(t, "stop", res.FinishReason)
	assert.Equal(t, "gpt-test", res.Model)

	req := s.Requests()[0]
	wantIn, wantOut := req.PromptTokens(), llmtest.Reply{Text: "The answer is 4."}.CompletionTokens()
	assert.Equal(t, int64(7), wantIn) // 14+12 chars → 7 tokens
	assert.Equal(t, wantIn, res.Usage.InputTokens)
	assert.Equal(t, wantOut, res.Usage.OutputTokens)
	assert.InDelta(t, (float64(wantIn)*2.5+float64(wantOut)*10)/1e6, res.Usage.CostUSD, 1e-12)

	assert.Equal(t, "gpt-test", req.Model)
	assert.True(t, req.Stream)
	assert.True(t, req.IncludeUsage)
	assert.Equal(t, 0.2, *req.Temperature)
	assert.Equal(t, "Bearer "+testKey, req.Header.Get("Authorization"))
	assert.Equal(t, 1, s.Count())
}

func TestCompleteUnpricedModelCostsZero(t *testing.T) {
	s := llmtest.Start(t, llmtest.Text("ok"))
	res, err := newModel(t, s, nil).Complete(context.Background(), Request{Model: "other", Messages: []Message{{Role: RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	assert.Equal(t, "other", s.Requests()[0].Model)
	assert.Zero(t, res.Usage.CostUSD)
	assert.Equal(t, int64(1), res.Usage.OutputTokens)
}

// The tool-call loop as the round engine runs it: the assistant's calls and
// the tool results go back in the next request, after a JSON round trip
// through the trace.
func TestToolCallRoundTrip(t *testing.T) {
	for _, omitType := range []bool{false, true} {
		t.Run(map[bool]string{false: "with type", true: "server omits type"}[omitType], func(t *testing.T) {
			first := llmtest.Call("vote", `{"agent_id":"agent2"}`).IfLastContains("decide")
			if omitType {
				first = first.WithoutType()
			}
			s := llmtest.Start(t, first, llmtest.Text("done").IfContains("vote recorded"))
			m := newModel(t, s, nil)

			history := []Message{{Role: RoleUser, Content: "decide"}}
			res, err := m.Complete(context.Background(), Request{Messages: history, Tools: []Tool{voteTool}})
			require.NoError(t, err)
			assert.Equal(t, "tool_calls", res.FinishReason)
			require.Equal(t, []ToolCall{{ID: "call_1_0", Name: "vote", Arguments: `{"agent_id":"agent2"}`}}, res.Message.ToolCalls)

			history = append(history, res.Message, Message{Role: RoleTool, ToolCallID: "call_1_0", Content: "vote recorded"})
			trace, err := json.Marshal(history)
			require.NoError(t, err)
			var replay []Message
			require.NoError(t, json.Unmarshal(trace, &replay))

			res, err = m.Complete(context.Background(), Request{Messages: replay, Tools: []Tool{voteTool}})
			require.NoError(t, err)
			assert.Equal(t, "done", res.Message.Content)

			reqs := s.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, "vote", reqs[0].Tools[0].Name)
			assert.Equal(t, "vote for an answer", reqs[0].Tools[0].Description)
			assert.JSONEq(t, `{"type":"object","properties":{"agent_id":{"type":"string"}}}`, string(reqs[0].Tools[0].Parameters))
			sent := reqs[1].Messages
			require.Len(t, sent, 3)
			assert.Equal(t, llmtest.Message{Role: "assistant", ToolCalls: []llmtest.ToolCall{
				{ID: "call_1_0", Type: "function", Name: "vote", Arguments: `{"agent_id":"agent2"}`},
			}}, sent[1])
			assert.Equal(t, llmtest.Message{Role: "tool", ToolCallID: "call_1_0", Content: "vote recorded"}, sent[2])
			assert.NotContains(t, string(reqs[1].Body), `"content":""`, "assistant content with only tool calls is null")
		})
	}
}

func TestOnChunkIsCalledPerStreamedChunk(t *testing.T) {
	s := llmtest.Start(t, llmtest.Text(strings.Repeat("lorem ipsum ", 20)))
	chunks := 0
	res, err := newModel(t, s, nil).Complete(context.Background(), Request{
		Messages: []Message{{Role: RoleUser, Content: "write"}},
		OnChunk:  func() { chunks++ },
	})
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("lorem ipsum ", 20), res.Message.Content)
	// role chunk + 15 text chunks of 16 runes + finish + usage
	assert.Equal(t, 18, chunks)
}

func TestMaxTokensFieldDependsOnServer(t *testing.T) {
	s := llmtest.Start(t, llmtest.Text("ok"))
	m := newModel(t, s, nil)
	limit := int64(64)
	_, err := m.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}, MaxTokens: &limit})
	require.NoError(t, err)
	assert.Contains(t, string(s.Requests()[0].Body), `"max_tokens":64`)

	m.maxCompletionTokens = true // as for api.openai.com
	_, err = m.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}, MaxTokens: &limit})
	require.NoError(t, err)
	assert.Contains(t, string(s.Requests()[1].Body), `"max_completion_tokens":64`)
}

func TestInvalidMessagesFailBeforeAnyRequest(t *testing.T) {
	s := llmtest.Start(t, llmtest.Text("ok"))
	m := newModel(t, s, nil)
	_, err := m.Complete(context.Background(), Request{Messages: []Message{{Role: "robot", Content: "hi"}}})
	require.ErrorContains(t, err, `unknown role "robot"`)
	_, err = m.Complete(context.Background(), Request{Messages: []Message{{Role: RoleTool, Content: "x"}}})
	require.ErrorContains(t, err, "tool message without tool_call_id")
	assert.False(t, IsRetryable(err))
	assert.Zero(t, s.Count())
}

func TestAmbientOpenAIEnvironmentIsIgnored(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-ambient-should-not-be-used")
	s := llmtest.Start(t, llmtest.Text("ok"))
	_, err := newModel(t, s, nil).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	assert.Equal(t, "Bearer "+testKey, s.Requests()[0].Header.Get("Authorization"))
}

func TestNewFromEnv(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}

	_, err := NewFromEnv(Config{Model: "gpt-4o"}, env(nil))
	require.ErrorContains(t, err, "environment variable OPENAI_API_KEY is empty or unset")

	_, err = NewFromEnv(Config{Model: "gpt-4o", APIKeyEnv: "TEAM_OPENAI_KEY"}, env(nil))
	require.ErrorContains(t, err, "TEAM_OPENAI_KEY")

	_, err = NewFromEnv(Config{Model: "gpt-4o", BaseURL: "https://api.openai.com/v1", APIKeyEnv: "K"}, env(nil))
	require.ErrorContains(t, err, "environment variable K is empty")

	m, err := NewFromEnv(Config{Model: "gpt-4o", APIKeyEnv: "K"}, env(map[string]string{"K": testKey}))
	require.NoError(t, err)
	assert.Equal(t, DefaultBaseURL, m.baseURL)
	assert.NotContains(t, strings.Join([]string{m.model, m.baseURL, m.keyEnv}, " "), testKey)

	// A local endpoint needs no key: a placeholder is sent.
	s := llmtest.Start(t, llmtest.Text("ok"))
	m, err = NewFromEnv(Config{Model: "llama3", BaseURL: s.URL()}, env(nil))
	require.NoError(t, err)
	_, err = m.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	assert.Equal(t, "Bearer no-key", s.Requests()[0].Header.Get("Authorization"))

	_, err = New(Config{Model: "m", BaseURL: "localhost:11434"}, "")
	require.ErrorContains(t, err, "is not an http(s) URL")
	_, err = New(Config{BaseURL: s.URL()}, "")
	require.ErrorContains(t, err, "no model configured")
}

func TestConfigSerializesWithoutSecrets(t *testing.T) {
	b, err := json.Marshal(Config{Model: "gpt-4o", APIKeyEnv: "OPENAI_API_KEY", Prices: Prices{"gpt-4o": {Input: 2.5, Output: 10}}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"gpt-4o","api_key_env":"OPENAI_API_KEY","prices":{"gpt-4o":{"input":2.5,"output":10}}}`, string(b))
}

func TestPricesCost(t *testing.T) {
	c, ok := Prices{"m": {Input: 1, Output: 2}}.Cost("m", 1_000_000, 500_000)
	assert.True(t, ok)
	assert.InDelta(t, 2.0, c, 1e-12)
	c, ok = Prices{"m": {Input: 1, Output: 2}}.Cost("other", 1_000_000, 0)
	assert.False(t, ok, "a model without a price is not free")
	assert.Zero(t, c)
}

package telemetry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
)

type fakeModel struct {
	resp llm.Response
	err  error
}

func (f fakeModel) Complete(context.Context, llm.Request) (llm.Response, error) { return f.resp, f.err }

func scrape(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func newModel(t *testing.T, tel *Telemetry, name string, priced bool, next llm.Model) llm.Model {
	t.Helper()
	cfg := &config.Config{Agents: []config.Agent{{ID: "a", Backend: config.Backend{Model: name}}}}
	if priced {
		cfg.Prices = map[string]coord.Price{name: {Input: 1, Output: 2}}
	}
	m, err := tel.Models(func(*config.Config, *config.Agent) (llm.Model, error) { return next, nil })(cfg, &cfg.Agents[0])
	require.NoError(t, err)
	return m
}

func TestModelMetrics(t *testing.T) {
	tel, err := New(t.Context(), Options{Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	ok := fakeModel{resp: llm.Response{Usage: coord.Usage{InputTokens: 100, OutputTokens: 10, CostUSD: 0.00012}}}
	priced := newModel(t, tel, "priced", true, ok)
	free := newModel(t, tel, "free", false, ok)
	failing := newModel(t, tel, "free", false, fakeModel{err: &llm.Error{Retryable: true, Err: errors.New("503")}})

	retry := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "task"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "vote"}}},
		{Role: llm.RoleTool, ToolCallID: "1", Name: "vote", Content: "Error: there are no answers to vote for yet."},
	}}
	for range 2 {
		_, err := priced.Complete(t.Context(), llm.Request{})
		require.NoError(t, err)
	}
	_, err = free.Complete(t.Context(), retry)
	require.NoError(t, err)
	_, err = failing.Complete(t.Context(), llm.Request{})
	require.Error(t, err)

	code, body := scrape(t, tel.Handler(&Health{}), "/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`conclave_model_calls_total{model="priced",outcome="ok"} 2`,
		`conclave_model_calls_total{model="free",outcome="ok"} 1`,
		`conclave_model_calls_total{model="free",outcome="retryable"} 1`,
		`conclave_model_tokens_total{model="priced",type="input"} 200`,
		`conclave_model_tokens_total{model="priced",type="output"} 20`,
		`conclave_model_cost_usd_total{model="priced"} 0.00024`,
		`conclave_model_unpriced_calls_total{model="free"} 1`,
		`conclave_enforcement_retries_total{model="free"} 1`,
		`conclave_model_call_duration_seconds_count{model="priced",outcome="ok"} 2`,
	} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, `conclave_model_cost_usd_total{model="free"}`, "an unpriced model has no cost, not $0")
}

func TestEnforcementRetry(t *testing.T) {
	asst := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "new_answer"}}}
	for _, tc := range []struct {
		name string
		msgs []llm.Message
		want bool
	}{
		{"first call", []llm.Message{{Role: llm.RoleUser, Content: "task"}}, false},
		{"workspace tool error", []llm.Message{asst, {Role: llm.RoleTool, Name: "read_file", Content: "Error: no such file"}}, false},
		{"workflow tool error", []llm.Message{asst, {Role: llm.RoleTool, Name: "new_answer", Content: "Error: duplicate"}}, true},
		{"no tool call", []llm.Message{{Role: llm.RoleAssistant, Content: "hm"}, {Role: llm.RoleUser, Content: "You did not call a workflow tool. Finish…"}}, true},
		{"an earlier correction", []llm.Message{asst, {Role: llm.RoleTool, Name: "new_answer", Content: "Error: x"}, asst, {Role: llm.RoleTool, Name: "new_answer", Content: "Answer recorded."}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, enforcementRetry(tc.msgs)) })
	}
}

func TestHealth(t *testing.T) {
	tel, err := New(t.Context(), Options{Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	h := &Health{}
	code, _ := scrape(t, tel.Handler(h), "/healthz")
	require.Equal(t, http.StatusOK, code)
	code, body := scrape(t, tel.Handler(h), "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	h.SetStarted(true)
	code, _ = scrape(t, tel.Handler(h), "/readyz")
	require.Equal(t, http.StatusOK, code)
	h.Check = func(context.Context) error { return errors.New("connection refused") }
	code, body = scrape(t, tel.Handler(h), "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "cannot reach Temporal")
}

// TestModelSpansExported sends spans to an OTLP/HTTP endpoint, as a
// collector would receive them, and finds the GenAI attributes in them.
func TestModelSpansExported(t *testing.T) {
	var mu sync.Mutex
	var got []byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b...)
		mu.Unlock()
	}))
	defer collector.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL) // the exporter reads the variable itself
	tel, err := New(t.Context(), Options{Getenv: func(k string) string { return env[k] }})
	require.NoError(t, err)
	require.True(t, tel.Tracing())
	m := newModel(t, tel, "gpt-test", false, fakeModel{resp: llm.Response{Model: "gpt-test-2025", FinishReason: "tool_calls",
		Usage: coord.Usage{InputTokens: 7, OutputTokens: 3}}})
	_, err = m.Complete(t.Context(), llm.Request{})
	require.NoError(t, err)
	require.NoError(t, tel.Shutdown(t.Context()))
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"chat gpt-test", "gen_ai.system", "gen_ai.request.model", "gen_ai.usage.input_tokens",
		"gen_ai.usage.output_tokens", "gen_ai.response.model", "gpt-test-2025", "conclave-worker"} {
		require.True(t, bytes.Contains(got, []byte(want)), "%q not in the exported spans", want)
	}
	require.False(t, strings.Contains(string(got), "Authorization"))
}

package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckJSON(t *testing.T) {
	type input struct {
		Task      string     `json:"task"`
		Config    Config     `json:"config"`
		SessionID string     `json:"session_id,omitempty"`
		Started   *time.Time `json:"started,omitempty"`
		hidden    string     // never a JSON key, as for encoding/json
	}
	typ := reflect.TypeFor[input]()
	_ = input{}.hidden
	agent := `{"id":"a","backend":{"type":"openai","model":"m"}}`
	for _, c := range []struct {
		name, json string
		want       []string // each a substring of one problem, in order
	}{
		{"valid", `{"task":"t","session_id":"s","config":{"agents":[` + agent + `],"orchestrator":{"fairness_enabled":false,"max_new_answers_per_agent":null},"prices":{"m":{"input":1,"output":2}}}}`, nil},
		{"extra_body and time are free-form", `{"task":"t","started":"2026-01-02T03:04:05Z","config":{"agents":[{"id":"a","backend":{"model":"m","extra_body":{"top_k":5,"nested":{"any":[1,{"x":2}]}}}}]}}`, nil},
		{"a model named api_key is a name", `{"task":"t","config":{"agents":[` + agent + `],"prices":{"api_key":{"input":1,"output":1}}}}`, nil},
		{"misspelled top key", `{"task":"t","sesion_id":"s"}`, []string{`unknown key "sesion_id" at the top level (did you mean "session_id"?)`}},
		{"misspelled orchestrator key", `{"task":"t","config":{"orchestrator":{"fairnes_enabled":false}}}`, []string{`unknown key "fairnes_enabled" in config.orchestrator (did you mean "fairness_enabled"?)`}},
		{"other case", `{"Task":"t"}`, []string{`unknown key "Task" at the top level (did you mean "task"?)`}},
		{"unexported field", `{"hidden":"x"}`, []string{`unknown key "hidden"`}},
		{"unknown backend key", `{"config":{"agents":[{"id":"a","backend":{"modle":"m"}}]}}`, []string{`unknown key "modle" in config.agents[0].backend (did you mean "model"?)`}},
		{"massgen key", `{"config":{"orchestrator":{"coordination":{"update_mode":"inject"}}}}`, []string{`unknown key "coordination" in config.orchestrator (a MassGen setting, read from YAML only`}},
		{"unknown key inside an unknown key", `{"config":{"agentz":[{"api_key":"sk-1"}]}}`, []string{`unknown key "agentz"`, "config.agentz[0].api_key: API keys do not belong"}},
		{"api_key in a backend", `{"task":"t","config":{"agents":[{"id":"a","backend":{"model":"m","api_key":"sk-live-SECRET"}}]}}`, []string{"config.agents[0].backend.api_key: API keys do not belong in the workflow input"}},
		{"api_key in extra_body", `{"config":{"agents":[{"id":"a","backend":{"extra_body":{"api_key":"sk-live-SECRET"}}}]}}`, []string{"config.agents[0].backend.extra_body.api_key: API keys"}},
		{"api_key at the top", `{"task":"t","api_key":"sk-live-SECRET"}`, []string{"api_key: API keys"}},
		{"duplicate top key", `{"task":"a","task":"b"}`, []string{"task: given more than once"}},
		{"duplicate nested key", `{"config":{"orchestrator":{"fairness_enabled":true,"fairness_enabled":false}}}`, []string{"config.orchestrator.fairness_enabled: given more than once"}},
		{"duplicate in extra_body", `{"config":{"agents":[{"id":"a","backend":{"extra_body":{"k":1,"k":2}}}]}}`, []string{"config.agents[0].backend.extra_body.k: given more than once"}},
		{"duplicate price", `{"config":{"prices":{"m":{"input":1},"m":{"input":2}}}}`, []string{`config.prices.m: given more than once`}},
		{"wrong types are json's to report", `{"task":5,"config":{"agents":"everyone","orchestrator":[1]}}`, nil},
		{"not json", `{"task":`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CheckJSON([]byte(c.json), typ)
			require.Len(t, got, len(c.want), "%q", got)
			for i, w := range c.want {
				assert.Contains(t, got[i], w)
				assert.NotContains(t, got[i], "SECRET")
			}
		})
	}
}

// Whatever encoding/json writes from a Config, CheckJSON accepts: a
// workflow's own continue-as-new input is never refused.
func TestCheckJSONAcceptsMarshalled(t *testing.T) {
	cfg, err := Parse([]byte(`
agents:
  - id: a
    backend: {type: gemini, model: m, temperature: 0.5, max_tokens: 10, top_p: 0.9, reasoning: {effort: low}, extra_body: {top_k: 3}}
    system_message: s
  - id: b
    backend: {type: openai, model: m, text: {verbosity: low}}
    subtask: x
orchestrator: {coordination_mode: decomposition, presenter: b, max_new_answers_global: null}
prices: {m: {input: 1, output: 2}}
`), "t.yaml")
	require.NoError(t, err)
	data, err := json.Marshal(cfg)
	require.NoError(t, err)
	assert.Empty(t, CheckJSON(data, reflect.TypeFor[Config]()), string(data))
	assert.NotContains(t, strings.ToLower(string(data)), `"api_key"`)
}

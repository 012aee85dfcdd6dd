package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const fullYAML = `
agents:
  - id: agent_a
    backend:
      model: gpt-4o-mini
      base_url: https://api.openai.com/v1
      api_key_env: OPENAI_API_KEY
      temperature: 0.7
      max_tokens: 4096
    system_message: "Be precise."
    subtask: "backend"
  - id: agent_b
    backend: {model: gpt-4o}
orchestrator:
  coordination_mode: decomposition
  allow_midstream_peer_updates_before_checklist_submit: false
  max_new_answers_per_agent: null
  presenter: agent_b
prices:
  gpt-4o-mini: {input: 0.15, output: 0.60}
`

// The config travels as JSON in workflow inputs: it must come back identical.
func TestJSONRoundTrip(t *testing.T) {
	for name, src := range map[string]string{
		"full":         fullYAML,
		"minimal":      "agent: {id: solo, backend: {model: m}}\n",
		"empty prices": "agent: {id: solo, backend: {model: m}}\nprices: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Parse([]byte(src), "config.yaml")
			require.NoError(t, err)
			data := requireJSONRoundTrip(t, c)

			assert.NotContains(t, string(data), `"api_key"`)
			assert.NotContains(t, jsonKeys(t, data), "api_key")
		})
	}
}

// jsonKeys returns every object key anywhere in a JSON document.
func jsonKeys(t *testing.T, data []byte) []string {
	var v any
	require.NoError(t, json.Unmarshal(data, &v))
	var keys []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				keys = append(keys, k)
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return keys
}

// JSON and YAML use the same snake_case names for every field.
func TestJSONNamesMatchYAML(t *testing.T) {
	for name, typ := range structTypes {
		if name == "config.document" {
			continue
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Anonymous && f.Tag.Get("yaml") == ",inline" && f.Tag.Get("json") == "" {
				continue // its fields are the parent's in both
			}
			y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			assert.NotEmpty(t, y, "%s.%s", name, f.Name)
			assert.Equal(t, y, j, "%s.%s", name, f.Name)
		}
	}
}

// Hand-written workflow input means what the same keys mean in YAML.
func TestJSONDefaults(t *testing.T) {
	var c Config
	require.NoError(t, json.Unmarshal([]byte(`{"agents":[{"id":"a","backend":{"model":"m"}}],
		"orchestrator":{"max_revote_rounds":0,"max_new_answers_global":null}}`), &c))
	c.ApplyDefaults()
	require.NoError(t, c.Validate())
	want := DefaultOrchestrator()
	want.MaxRevoteRounds = 0
	want.MaxNewAnswersGlobal = nil
	assert.Equal(t, want, c.Orchestrator)
	assert.Equal(t, DefaultAPIKeyEnv, c.Agents[0].Backend.APIKeyEnv)

	var bare Config
	require.NoError(t, json.Unmarshal([]byte(`{"agents":[{"id":"a","backend":{"type":"openai","model":"m","api_key_env":"K"}}]}`), &bare))
	assert.Equal(t, DefaultOrchestrator(), bare.Orchestrator)
	require.NoError(t, bare.Validate())
}

// Validate checks configs that never saw YAML, and reports every problem.
func TestValidateFromJSON(t *testing.T) {
	var c Config
	require.NoError(t, json.Unmarshal([]byte(`{"agents":[
		{"id":"ok","backend":{"type":"openai","model":"m","api_key_env":"K"}},
		{"id":"Bad!","backend":{"type":"","model":"","api_key_env":"lower"}}],
		"orchestrator":{"scheduling":"sometimes","presenter":"ghost"}}`), &c))
	err := c.Validate()
	require.Error(t, err)
	for _, w := range []string{
		`agents[1].id: "Bad!" is not a valid id`,
		`agents[1].backend.type: unsupported backend type ""`,
		"agents[1].backend.model: required",
		"agents[1].backend.api_key_env: must be the name",
		`orchestrator.scheduling: "sometimes" is not one of: async, rounds`,
		`orchestrator.presenter: "ghost" is not an agent; use one of: ok, Bad!`,
	} {
		assert.Contains(t, err.Error(), w)
	}
	assert.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), 6)

	empty := Config{Orchestrator: DefaultOrchestrator()}
	assert.EqualError(t, empty.Validate(), "agents: at least one agent is required; add an `agents:` list (or `agent:` with one agent for step mode)")
}

func TestApplyDefaultsIdempotent(t *testing.T) {
	c, err := Parse([]byte(fullYAML), "c.yaml")
	require.NoError(t, err)
	before, _ := json.Marshal(c)
	c.ApplyDefaults()
	after, _ := json.Marshal(c)
	assert.JSONEq(t, string(before), string(after))
}

func TestPriceWithoutPrices(t *testing.T) {
	var c Config
	_, _, ok := c.Price("gpt-4o")
	assert.False(t, ok)
}

func TestSuggest(t *testing.T) {
	keys := knownKeys("config.Orchestrator")
	assert.Equal(t, "max_steps_per_agent", suggest("max_step_per_agent", keys))
	assert.Equal(t, "", suggest("completely_unrelated_setting", keys))
	assert.Contains(t, knownKeys("config.document"), "agent")
	assert.Contains(t, knownKeys("config.document"), "orchestrator")
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(fullYAML))
	f.Add([]byte(agentA))
	f.Add([]byte("agent: {id: a, backend: {model: m, api_key: x}}"))
	f.Add([]byte("agents: [&x {id: a, backend: {model: m}}, *x]\norchestrator: {max_steps_per_agent: \"x\"}"))
	f.Add([]byte("prices: {a: {input: .nan}}\nagents: []\n---\n"))
	f.Add([]byte("{{{"))
	f.Add([]byte("agent: {id: Q.1, backend: {type: vllm, model: m, top_k: 2, extra_body: {a: [1]}, cwd: x}}\nui: {display_type: simple}\ntimeout_settings: {orchestrator_timeout_seconds: 9.5}\norchestrator: {presenter_agent: Q.1, coordination: {update_mode: restart, skip_voting: true}}\n"))
	f.Add([]byte("agents: &a [*a]\n"))
	f.Add([]byte("agent: {id: a, backend: {model: m}}\norchestrator: {<<: {scheduling: rounds}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if c != nil {
				t.Fatal("config returned with an error")
			}
			return
		}
		// Whatever parses must be valid and survive the trip into a workflow.
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed config does not validate: %v", err)
		}
		data, err = json.Marshal(c)
		if err != nil {
			t.Fatalf("parsed config does not marshal: %v", err)
		}
		var back Config
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("round-tripped config does not validate: %v", err)
		}
	})
}

// requireJSONRoundTrip checks that what a workflow carries decodes to the
// same config, still valid, and returns the JSON.
func requireJSONRoundTrip(t *testing.T, c *Config) []byte {
	t.Helper()
	data, err := json.Marshal(c)
	require.NoError(t, err)
	var back Config
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, *c, back)
	require.NoError(t, back.Validate())
	return data
}

package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func intp(v int) *int { return &v }

func TestParseGood(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		check func(t *testing.T, c *Config)
	}{
		{
			name: "single agent form, everything defaulted",
			yaml: `
agent:
  id: solo
  backend:
    model: gpt-4o-mini
`,
			check: func(t *testing.T, c *Config) {
				require.Len(t, c.Agents, 1)
				a := c.Agents[0]
				assert.Equal(t, "solo", a.ID)
				assert.Equal(t, Backend{Type: BackendOpenAI, Model: "gpt-4o-mini", APIKeyEnv: DefaultAPIKeyEnv}, a.Backend)
				assert.Equal(t, DefaultOrchestrator(), c.Orchestrator)
				assert.Nil(t, c.Prices)
				single, err := c.Single()
				require.NoError(t, err)
				assert.Equal(t, "solo", single.ID)
			},
		},
		{
			name: "multi agents with every setting",
			yaml: `
agents:
  - id: agent_a
    backend:
      type: openai
      model: gpt-4o-mini
      base_url: http://localhost:8000/v1
      api_key_env: VLLM_KEY
      temperature: 0.7
      max_tokens: 4096
    system_message: Be terse.
    subtask: write the backend
  - id: agent-b
    backend: {model: llama3}
orchestrator:
  coordination_mode: decomposition
  voting_sensitivity: checklist_gated
  disable_injection: true
  fairness_enabled: false
  fairness_lead_cap_answers: 0
  max_midstream_injections_per_round: 5
  defer_peer_updates_until_restart: true
  allow_midstream_peer_updates_before_checklist_submit: true
  max_new_answers_per_agent: null
  max_new_answers_global: 20
  defer_voting_until_all_answered: true
  max_checklist_calls_per_round: 0
  answer_novelty_requirement: strict
  checklist_first_answer: true
  scheduling: rounds
  consensus: plurality
  max_revote_rounds: 0
  update_mode: restart
  final_answer_strategy: synthesize
  presenter: agent-b
  orchestrator_timeout_seconds: 60
  max_steps_per_agent: 999
  max_enforcement_attempts: 1
  round_evaluator_before_checklist: true
  orchestrator_managed_round_evaluator: true
  round_evaluator_transformation_pressure: aggressive
prices:
  gpt-4o-mini: {input: 0.15, output: 0.60}
  llama3: {input: 0, output: 0}
`,
			check: func(t *testing.T, c *Config) {
				assert.Equal(t, []string{"agent_a", "agent-b"}, c.AgentIDs())
				a, ok := c.Agent("agent_a")
				require.True(t, ok)
				assert.Equal(t, "http://localhost:8000/v1", a.Backend.BaseURL)
				assert.Equal(t, "VLLM_KEY", a.Backend.APIKeyEnv)
				assert.InDelta(t, 0.7, *a.Backend.Temperature, 1e-9)
				assert.Equal(t, 4096, *a.Backend.MaxTokens)
				assert.Equal(t, "Be terse.", a.SystemMessage)
				b, _ := c.Agent("agent-b")
				assert.Equal(t, DefaultAPIKeyEnv, b.Backend.APIKeyEnv)
				_, ok = c.Agent("nobody")
				assert.False(t, ok)
				yes := true
				assert.Equal(t, Orchestrator{
					CoordinationMode:                               ModeDecomposition,
					VotingSensitivity:                              SensitivityChecklistGated,
					DisableInjection:                               true,
					FairnessLeadCapAnswers:                         0,
					MaxMidstreamInjectionsPerRound:                 5,
					DeferPeerUpdatesUntilRestart:                   true,
					AllowMidstreamPeerUpdatesBeforeChecklistSubmit: &yes,
					MaxNewAnswersGlobal:                            intp(20),
					DeferVotingUntilAllAnswered:                    true,
					ChecklistFirstAnswer:                           true,
					AnswerNoveltyRequirement:                       NoveltyStrict,
					Scheduling:                                     SchedulingRounds,
					Consensus:                                      ConsensusPlurality,
					UpdateMode:                                     UpdateRestart,
					FinalAnswerStrategy:                            FinalSynthesize,
					Presenter:                                      "agent-b",
					OrchestratorTimeoutSeconds:                     60,
					MaxStepsPerAgent:                               999,
					MaxEnforcementAttempts:                         1,
					RoundEvaluatorBeforeChecklist:                  true,
					OrchestratorManagedRoundEvaluator:              true,
					RoundEvaluatorTransformationPressure:           PressureAggressive,
				}, c.Orchestrator)
				in, out, ok := c.Price("gpt-4o-mini")
				assert.True(t, ok)
				assert.InDelta(t, 0.15, in, 1e-9)
				assert.InDelta(t, 0.60, out, 1e-9)
				_, _, ok = c.Price("gpt-4o-mini-2024-07-18")
				assert.False(t, ok, "prices match model names exactly")
				_, err := c.Single()
				assert.EqualError(t, err, "step mode needs exactly one agent; the config has 2 (use `agent:` with one agent, or run coordination instead)")
			},
		},
		{
			name: "empty orchestrator and explicit empty enums keep defaults",
			yaml: `
agents: [{id: a, backend: {model: m}}]
orchestrator:
`,
			check: func(t *testing.T, c *Config) {
				assert.Equal(t, DefaultOrchestrator(), c.Orchestrator)
			},
		},
		{
			name: "unlimited answers and explicit zeros are kept",
			yaml: `
agents: [{id: a, backend: {model: m}}]
orchestrator:
  coordination_mode: ""
  max_new_answers_per_agent: ~
  max_new_answers_global: null
  max_revote_rounds: 0
  fairness_enabled: false
`,
			check: func(t *testing.T, c *Config) {
				o := c.Orchestrator
				assert.Equal(t, ModeVoting, o.CoordinationMode)
				assert.Nil(t, o.MaxNewAnswersPerAgent)
				assert.Nil(t, o.MaxNewAnswersGlobal)
				assert.Zero(t, o.MaxRevoteRounds)
				assert.False(t, o.FairnessEnabled)
				assert.Equal(t, 1800, int(o.Timeout().Seconds()))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "config.yaml")
			require.NoError(t, err)
			tt.check(t, c)
			require.NoError(t, c.Validate())
		})
	}
}

// agentA is a valid agent list, to which bad cases add one problem.
const agentA = "agents:\n  - id: agent_a\n    backend:\n      model: gpt-4o-mini\n"

func TestParseBad(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error, in any order
		deny string   // must not appear (a secret)
	}{
		{"unknown top-level key", "agent_list:\n  - id: a\n", []string{`config.yaml:1: unknown key "agent_list" at the top level`}, ""},
		{"unknown top-level key with suggestion", agentA + "orchestrater: {}\n", []string{`config.yaml:5: unknown key "orchestrater" at the top level (did you mean "orchestrator"?)`}, ""},
		{"unknown orchestrator key", agentA + "orchestrator:\n  fairness_enabled: true\n  fairnes_enabled: true\n", []string{`config.yaml:7: unknown key "fairnes_enabled" in orchestrator (did you mean "fairness_enabled"?)`}, ""},
		{"unknown backend key", "agents:\n  - id: a\n    backend:\n      model: m\n      modle: m\n", []string{`config.yaml:5: unknown key "modle" in agents[0].backend (did you mean "model"?)`}, ""},
		{"unknown price key", agentA + "prices:\n  gpt-4o: {input: 1, outptu: 2}\n", []string{`config.yaml:6: unknown key "outptu" in prices["gpt-4o"]`}, ""},
		{"api_key in backend", "agents:\n  - id: a\n    backend:\n      model: m\n      api_key: sk-secret123\n", []string{"config.yaml:5: agents[0].backend.api_key: API keys do not belong in the config", "api_key_env"}, "sk-secret123"},
		{"api_key in single agent", "agent:\n  id: a\n  backend: {model: m, api_key: sk-secret123}\n", []string{"config.yaml:3: agent.backend.api_key: API keys do not belong"}, "sk-secret123"},
		{"bad id chars", "agents:\n  - id: Agent A\n    backend: {model: m}\n", []string{`config.yaml:2: agents[0].id: "Agent A" is not a valid id`}, ""},
		{"id too long", "agents:\n  - id: " + strings.Repeat("a", 65) + "\n    backend: {model: m}\n", []string{"agents[0].id:", "is 65 characters; ids are at most 64"}, ""},
		{"missing id", "agents:\n  - backend: {model: m}\n", []string{"config.yaml:2: agents[0].id: required"}, ""},
		{"duplicate ids", agentA + "  - id: agent_a\n    backend: {model: m}\n", []string{`config.yaml:5: agents[1].id: "agent_a" is already the id of agents[0]`}, ""},
		{"agent and agents both", agentA + "agent:\n  id: b\n  backend: {model: m}\n", []string{"config.yaml:5: use either `agent:` (one agent) or `agents:` (a list), not both; `agents:` is at line 1"}, ""},
		{"no agents", "orchestrator:\n  scheduling: rounds\n", []string{"config: agents: at least one agent is required"}, ""},
		{"empty agents list", "agents: []\n", []string{"config.yaml:1: agents: at least one agent is required"}, ""},
		{"bad enum", agentA + "orchestrator:\n  coordination_mode: vote\n", []string{`config.yaml:6: orchestrator.coordination_mode: "vote" is not one of: voting, decomposition`}, ""},
		{"bad consensus", agentA + "orchestrator: {consensus: unanimous}\n", []string{`orchestrator.consensus: "unanimous" is not one of: majority, plurality`}, ""},
		{"negative limit", agentA + "orchestrator:\n  fairness_lead_cap_answers: -1\n", []string{"config.yaml:6: orchestrator.fairness_lead_cap_answers: -1 is not allowed; use 0 or more"}, ""},
		{"zero answers", agentA + "orchestrator:\n  max_new_answers_global: 0\n", []string{"orchestrator.max_new_answers_global: 0 is not allowed; use 1 or more, or null for unlimited"}, ""},
		{"steps out of range", agentA + "orchestrator: {max_steps_per_agent: 1000}\n", []string{"orchestrator.max_steps_per_agent: 1000 is out of range; use 1 to 999"}, ""},
		{"zero timeout", agentA + "orchestrator: {orchestrator_timeout_seconds: 0}\n", []string{"orchestrator.orchestrator_timeout_seconds: 0 is out of range"}, ""},
		{"presenter unknown", agentA + "orchestrator:\n  presenter: agent_z\n", []string{`config.yaml:6: orchestrator.presenter: "agent_z" is not an agent; use one of: agent_a`}, ""},
		{"bad api_key_env", "agents:\n  - id: a\n    backend:\n      model: m\n      api_key_env: sk-proj-abc123\n", []string{"config.yaml:5: agents[0].backend.api_key_env: must be the name of an environment variable"}, "sk-proj-abc123"},
		{"infrastructure api_key_env", "agents:\n  - id: a\n    backend:\n      model: m\n      api_key_env: CONCLAVE_CODEC_KEY\n", []string{"config.yaml:5: agents[0].backend.api_key_env: CONCLAVE_CODEC_KEY is a worker's infrastructure variable (CONCLAVE_*)"}, ""},
		{"base_url with credentials", "agents:\n  - id: a\n    backend:\n      model: m\n      base_url: https://u:hunter2@example.com/v1\n", []string{"config.yaml:5: agents[0].backend.base_url: must not contain a user or password"}, "hunter2"},
		{"base_url not http", "agent: {id: a, backend: {model: m, base_url: localhost:8000}}\n", []string{"agent.backend.base_url: must be an http:// or https:// URL"}, ""},
		{"temperature out of range", "agents:\n  - id: a\n    backend: {model: m, temperature: 2.5}\n", []string{"config.yaml:3: agents[0].backend.temperature: 2.5 is out of range; use a number from 0 to 2"}, ""},
		{"temperature NaN", "agents:\n  - id: a\n    backend: {model: m, temperature: .nan}\n", []string{"agents[0].backend.temperature: NaN is out of range"}, ""},
		{"max_tokens zero", "agent: {id: a, backend: {model: m, max_tokens: 0}}\n", []string{"agent.backend.max_tokens: 0 is not allowed"}, ""},
		{"backend type", "agents:\n  - id: a\n    backend: {type: anthropic, model: m}\n", []string{`config.yaml:3: agents[0].backend.type: unsupported backend type "anthropic"; use one of: openai, azure_openai, claude`, `(chatcompletion reaches any OpenAI-compatible endpoint`}, ""},
		{"refused backend type", "agents:\n  - id: a\n    backend: {type: claude_code, model: sonnet, cwd: ws}\n", []string{`config.yaml:3: agents[0].backend.type: backend type "claude_code" is not supported: it runs the Claude Code agent SDK`, "Use type: claude"}, ""},
		{"chatcompletion needs base_url", "agents:\n  - id: a\n    backend: {type: chatcompletion, model: m}\n", []string{"config.yaml:3: agents[0].backend.base_url: required for type chatcompletion"}, ""},
		{"unknown key in coordination", agentA + "orchestrator:\n  coordination:\n    update_mod: restart\n", []string{`config.yaml:7: unknown key "update_mod" in orchestrator.coordination (did you mean "update_mode"?)`}, ""},
		{"flat and nested both", agentA + "orchestrator:\n  update_mode: inject\n  coordination:\n    update_mode: restart\n", []string{"config.yaml:8: orchestrator.coordination.update_mode: update_mode is also set at line 6 (orchestrator.update_mode); keep one"}, ""},
		{"timeout_settings out of range", agentA + "timeout_settings:\n  orchestrator_timeout_seconds: -5\n", []string{"config.yaml:6: timeout_settings.orchestrator_timeout_seconds: -5 is out of range; use 1 to 31536000 seconds"}, ""},
		{"timeout_settings NaN", agentA + "timeout_settings:\n  orchestrator_timeout_seconds: .nan\n", []string{"config.yaml:6: timeout_settings.orchestrator_timeout_seconds: .nan is out of range"}, ""},
		{"unknown key in timeout_settings", agentA + "timeout_settings:\n  orchestrator_timeout_second: 5\n", []string{`config.yaml:6: unknown key "orchestrator_timeout_second" in timeout_settings (did you mean "orchestrator_timeout_seconds"?)`}, ""},
		{"unknown and bad value together", "agents:\n  - id: a\n    backend: {model: m, temperature: 9, colour: red}\n", []string{`unknown key "colour"`, "temperature: 9 is out of range"}, ""},
		{"extra_body reserved", "agents:\n  - id: a\n    backend: {model: m, extra_body: {model: x}}\n", []string{"agents[0].backend.extra_body.model: Conclave sets this request field itself"}, ""},
		{"model missing", "agents:\n  - id: a\n    backend:\n      type: openai\n", []string{"config.yaml:3: agents[0].backend.model: required"}, ""},
		{"winner_reuse in decomposition", agentA + "orchestrator: {coordination_mode: decomposition, final_answer_strategy: winner_reuse}\n", []string{"orchestrator.final_answer_strategy: winner_reuse cannot be used with coordination_mode: decomposition"}, ""},
		{"subtask in voting mode", "agents:\n  - id: a\n    backend: {model: m}\n    subtask: the UI\n", []string{"config.yaml:4: agents[0].subtask: subtasks are only used with coordination_mode: decomposition"}, ""},
		{"negative price", agentA + "prices:\n  gpt-4o-mini: {input: -1, output: .inf}\n", []string{`prices["gpt-4o-mini"].input: -1 is not allowed`, `prices["gpt-4o-mini"].output: +Inf is not allowed`}, ""},
		{"wrong type", agentA + "orchestrator:\n  max_steps_per_agent: \"x\"\n", []string{`config.yaml:6: orchestrator.max_steps_per_agent: expected a whole number, got "x"`}, ""},
		{"wrong type bool", agentA + "orchestrator:\n  fairness_enabled: sometimes\n", []string{`config.yaml:6: orchestrator.fairness_enabled: expected true or false, got "sometimes"`}, ""},
		{"wrong type list", "agents:\n  id: a\n", []string{"config.yaml:2: agents: expected a list, got a mapping"}, ""},
		{"wrong type long value", agentA + "orchestrator:\n  max_revote_rounds: twelve-and-a-half\n", []string{`config.yaml:6: orchestrator.max_revote_rounds: expected a whole number, got "twelve-and-a-half"`}, ""},
		{"garbage", "{{{ not: yaml", []string{"config.yaml:1: invalid YAML:"}, ""},
		{"tabs", "agents:\n\t- id: a\n", []string{"config.yaml:2: invalid YAML:"}, ""},
		{"not a mapping", "hello world\n", []string{"config.yaml:1: the config must be a mapping"}, ""},
		{"empty", "# nothing here\n", []string{"config.yaml: the config is empty"}, ""},
		{"two documents", agentA + "---\nagents: []\n", []string{"only one YAML document is allowed"}, ""},
		{"duplicate key", agentA + "orchestrator: {}\norchestrator: {}\n", []string{`config.yaml:6: mapping key "orchestrator" already defined at line 5`}, ""},
		{"several problems at once", "agents:\n  - id: .A\n    backend: {model: \"\"}\n  - id: .A\n    backend: {model: m, temperature: 9}\n",
			[]string{`agents[0].id: ".A" is not a valid id`, "agents[0].backend.model: required", "agents[1].backend.temperature: 9 is out of range", `agents[1].id: ".A" is already the id`}, ""},
		{"ids differing in case", "agents:\n  - id: Qwen\n    backend: {model: m}\n  - id: qwen\n    backend: {model: m}\n",
			[]string{`config.yaml:4: agents[1].id: "qwen" differs from agents[0]'s "Qwen" only in case`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			source := "config.yaml"
			if tt.name == "no agents" {
				source = ""
			}
			c, err := Parse([]byte(tt.yaml), source)
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

func TestParseFieldErrors(t *testing.T) {
	_, err := Parse([]byte("agents:\n  - id: a\n    backend: {model: m, temperature: 3}\n"), "c.yaml")
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "agents[0].backend.temperature", fe.Path)
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conclave.yaml")
	require.NoError(t, os.WriteFile(path, []byte(agentA+"orchestrator:\n  bogus: 1\n"), 0o600))
	_, err := Load(path)
	assert.ErrorContains(t, err, path+`:6: unknown key "bogus" in orchestrator`)

	require.NoError(t, os.WriteFile(path, []byte(agentA), 0o600))
	c, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"agent_a"}, c.AgentIDs())

	_, err = Load(filepath.Join(dir, "missing.yaml"))
	assert.ErrorContains(t, err, "read config:")
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

package config

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// resolved is what a MassGen backend must turn into.
type resolved struct{ id, typ, baseURL, keyEnv string }

func TestMassGenConfigs(t *testing.T) {
	tests := []struct {
		file   string
		agents []resolved
		// warned and noted list the paths reported as warnings and notes.
		warned, noted []string
		check         func(t *testing.T, c *Config)
	}{
		{
			file: "three_agents_web.yaml",
			agents: []resolved{
				{"gemini2.5flash", "gemini", "https://generativelanguage.googleapis.com/v1beta/openai/", "GEMINI_API_KEY"},
				{"gpt5nano", "openai", "", "OPENAI_API_KEY"},
				{"grok3mini", "grok", "https://api.x.ai/v1", "XAI_API_KEY"},
			},
			warned: []string{"agents[0].backend.enable_web_search", "agents[1].backend.enable_web_search", "agents[1].backend.enable_code_interpreter", "agents[2].backend.enable_web_search"},
			noted:  []string{"agents[1].backend.reasoning.summary", "ui"},
			check: func(t *testing.T, c *Config) {
				b := c.Agents[1].Backend
				assert.Equal(t, &Reasoning{Effort: "medium"}, b.Reasoning)
				assert.Equal(t, &Text{Verbosity: "medium"}, b.Text)
				assert.Equal(t, ExtraBody{"search_parameters": map[string]any{"mode": "auto", "return_citations": true}}, c.Agents[2].Backend.ExtraBody)
			},
		},
		{
			file:   "single_claude_mcp.yaml",
			agents: []resolved{{"claude_agent", "claude", "https://api.anthropic.com/v1/", "ANTHROPIC_API_KEY"}},
			warned: []string{"orchestrator.context_paths"},
			noted:  []string{"agent.backend.cwd", "orchestrator.snapshot_storage", "orchestrator.agent_temporary_workspace", "ui"},
			check: func(t *testing.T, c *Config) {
				assert.Equal(t, 900, c.Orchestrator.OrchestratorTimeoutSeconds)
				assert.Equal(t, 0.3, *c.Agents[0].Backend.Temperature)
				b := c.Agents[0].Backend
				assert.Equal(t, []MCPServer{{Name: "weather", Type: MCPStdio, Command: "npx", Args: []string{"-y", "@fak111/weather-mcp"},
					Env: map[string]string{"BRAVE_API_KEY": "${BRAVE_API_KEY}"}}}, b.MCPServers)
				assert.Equal(t, []string{"mcp__weather__delete"}, b.ExcludeTools)
				data, err := json.Marshal(c)
				require.NoError(t, err)
				assert.Contains(t, string(data), `"BRAVE_API_KEY":"${BRAVE_API_KEY}"`, "only the reference travels; the worker reads the value")
			},
		},
		{
			file: "chatcompletion_providers.yaml",
			agents: []resolved{
				{"cerebras", "chatcompletion", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"},
				{"together", "together", "https://api.together.xyz/v1", "TOGETHER_API_KEY"},
				{"fireworks", "fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"},
				{"groq", "groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"},
				{"openrouter", "openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"},
				{"gateway", "chatcompletion", "https://llm.internal.example/v1", ""},
			},
			noted: []string{"ui"},
			check: func(t *testing.T, c *Config) {
				assert.Equal(t, 0.9, *c.Agents[1].Backend.TopP)
				assert.True(t, c.Agents[0].Backend.KeyRequired())
				assert.False(t, c.Agents[5].Backend.KeyRequired(), "an unknown endpoint gets no key unless api_key_env names one")
			},
		},
		{
			file: "local_servers.yaml",
			agents: []resolved{
				{"Qwen3-4b", "vllm", "http://localhost:8000/v1", "VLLM_API_KEY"},
				{"sglang_agent", "sglang", "http://gpu-box:30000/v1", "SGLANG_API_KEY"},
				{"lmstudio_agent", "lmstudio", "http://localhost:1234/v1", "LMSTUDIO_API_KEY"},
			},
			warned: []string{"orchestrator.voting_sensitivity"},
			noted:  []string{"ui"},
			check: func(t *testing.T, c *Config) {
				assert.Equal(t, ExtraBody{"top_k": 20.0, "chat_template_kwargs": map[string]any{"enable_thinking": false}}, c.Agents[0].Backend.ExtraBody)
				assert.Equal(t, SensitivityBalanced, c.Orchestrator.VotingSensitivity)
				assert.Equal(t, 3, *c.Orchestrator.MaxNewAnswersPerAgent)
				assert.Equal(t, NoveltyLenient, c.Orchestrator.AnswerNoveltyRequirement)
				assert.False(t, c.Agents[0].Backend.KeyRequired())
			},
		},
		{
			file: "azure_qwen_zai_kimi.yaml",
			agents: []resolved{
				{"azure_gpt4o", "azure_openai", "https://my-resource.openai.azure.com/openai/v1", "AZURE_OPENAI_API_KEY"},
				{"azure_from_env", "azure_openai", "", "AZURE_OPENAI_API_KEY"},
				{"qwen_max", "qwen", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "QWEN_API_KEY"},
				{"glm", "zai", "https://api.z.ai/api/paas/v4/", "ZAI_API_KEY"},
				{"kimi", "moonshot", "https://api.moonshot.cn/v1", "MOONSHOT_API_KEY"},
				{"kimi2", "kimi", "https://api.moonshot.cn/v1", "MOONSHOT_API_KEY"},
			},
			noted: []string{"agents[0].backend.api_version", "ui"},
		},
		{
			file: "more_providers.yaml",
			agents: []resolved{
				{"cerebras", "cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"},
				{"nebius", "nebius", "https://api.studio.nebius.ai/v1", "NEBIUS_API_KEY"},
				{"poe", "poe", "https://api.poe.com/v1", "POE_API_KEY"},
				{"inference", "inference", "http://gpu-box:8000/v1", ""},
			},
			noted: []string{"ui"},
		},
		{
			file: "orchestrator_nested.yaml",
			agents: []resolved{
				{"researcher", "openai", "", "OPENAI_API_KEY"},
				{"critic", "claude", "https://api.anthropic.com/v1/", "ANTHROPIC_API_KEY"},
			},
			warned: []string{"orchestrator.coordination.max_orchestration_restarts", "orchestrator.coordination.enable_planning_mode"},
			noted: []string{"orchestrator.snapshot_storage", "orchestrator.agent_temporary_workspace", "orchestrator.skip_final_presentation",
				"orchestrator.coordination.planning_mode_instruction", "orchestrator.coordination.use_skills", "ui"},
			check: func(t *testing.T, c *Config) {
				o := c.Orchestrator
				assert.Equal(t, UpdateRestart, o.UpdateMode)
				assert.Equal(t, 6, *o.MaxNewAnswersGlobal)
				assert.Equal(t, 1, o.FairnessLeadCapAnswers)
				assert.Equal(t, "critic", o.Presenter)
				assert.Equal(t, FinalWinnerReuse, o.FinalAnswerStrategy)
				assert.Equal(t, 601, o.OrchestratorTimeoutSeconds)
				assert.Equal(t, 300, o.InitialRoundTimeoutSeconds, "timeout_settings' round timeouts are honoured")
				assert.Equal(t, 120, o.SubsequentRoundTimeoutSeconds)
				assert.Equal(t, 60, o.RoundTimeoutGraceSeconds)
				assert.Equal(t, ExtraBody{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2000.0}}, c.Agents[1].Backend.ExtraBody)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, warnings, err := LoadWithWarnings(filepath.Join("testdata", "massgen", tt.file))
			require.NoError(t, err)
			require.Len(t, c.Agents, len(tt.agents))
			for i, want := range tt.agents {
				b := c.Agents[i].Backend
				assert.Equal(t, want, resolved{c.Agents[i].ID, b.Type, b.BaseURL, b.APIKeyEnv}, "agent %d", i)
			}
			var warned, noted []string
			for _, w := range warnings {
				assert.Positive(t, w.Line, w.String())
				if w.Note {
					noted = append(noted, w.Path)
				} else {
					warned = append(warned, w.Path)
				}
			}
			assert.ElementsMatch(t, tt.warned, warned)
			assert.ElementsMatch(t, tt.noted, noted)
			if tt.check != nil {
				tt.check(t, c)
			}
			requireJSONRoundTrip(t, c)
		})
	}
}

func TestMassGenWarningText(t *testing.T) {
	_, warnings, err := ParseWithWarnings([]byte("agent:\n  id: a\n  backend:\n    type: gemini\n    model: m\n    enable_web_search: true\n    text: {verbosity: low}\n"), "c.yaml")
	require.NoError(t, err)
	var lines []string
	for _, w := range warnings {
		lines = append(lines, w.String())
	}
	text := strings.Join(lines, "\n")
	assert.Contains(t, text, "c.yaml:6: warning: agent.backend.enable_web_search: ignored: provider-side tools are not enabled")
	assert.Contains(t, text, "c.yaml:7: warning: agent.backend.text: Google Gemini (OpenAI compatibility) does not take verbosity; it is not sent")
}

func TestKeyRequired(t *testing.T) {
	tests := []struct {
		b    Backend
		want bool
	}{
		{Backend{Type: "gemini"}, true},
		{Backend{Type: "claude", BaseURL: "http://127.0.0.1:4000/v1"}, false},
		{Backend{Type: "openai", BaseURL: "http://localhost:11434/v1"}, false},
		{Backend{Type: "azure_openai", BaseURL: "https://r.openai.azure.com/"}, true},
		{Backend{Type: "chatcompletion", BaseURL: "https://api.groq.com/openai/v1"}, true},
		{Backend{Type: "vllm"}, false},
	}
	for _, tt := range tests {
		b := tt.b
		b.applyDefaults()
		assert.Equal(t, tt.want, b.KeyRequired(), "%+v", b)
	}
}

func TestResolveBaseURL(t *testing.T) {
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == "AZURE_OPENAI_ENDPOINT" {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		b       Backend
		env     string
		want    string
		wantErr string
	}{
		{Backend{Type: "gemini", BaseURL: "https://g/v1"}, "", "https://g/v1", ""},
		{Backend{Type: "openai"}, "", "", ""},
		{Backend{Type: "azure_openai"}, "https://r.openai.azure.com/", "https://r.openai.azure.com/openai/v1", ""},
		{Backend{Type: "azure_openai"}, "", "", "set base_url in the config or AZURE_OPENAI_ENDPOINT"},
		{Backend{Type: "azure_openai"}, "https://u:p@r.openai.azure.com/", "", "AZURE_OPENAI_ENDPOINT is not an http(s) URL without credentials"},
	}
	for _, tt := range tests {
		got, err := tt.b.ResolveBaseURL(env(tt.env))
		if tt.wantErr != "" {
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "u:p", "the value is not echoed")
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tt.want, got)
	}
}

func TestMassGenAgentLevelKeys(t *testing.T) {
	c, warnings, err := ParseWithWarnings([]byte(`agents:
  - id: a
    backend:
      type: openai
      model: m
      context_paths: [{path: ., permission: read}]
    memory: {enabled: true}
    system_message: "Be brief."
    append_system_prompt: "Cite sources."
`), "c.yaml")
	require.NoError(t, err)
	assert.Equal(t, "Be brief.\n\nCite sources.", c.Agents[0].SystemMessage)
	var paths []string
	for _, w := range warnings {
		require.False(t, w.Note, w.String())
		paths = append(paths, w.Path)
	}
	assert.Equal(t, []string{"agents[0].backend.context_paths", "agents[0].memory"}, paths)
}

func TestMassGenClaudeReasoning(t *testing.T) {
	c, warnings, err := ParseWithWarnings([]byte("agent:\n  id: a\n  backend:\n    type: claude\n    model: m\n    reasoning: {effort: high}\n"), "c.yaml")
	require.NoError(t, err)
	assert.Nil(t, c.Agents[0].Backend.Reasoning)
	require.Len(t, warnings, 1)
	assert.Equal(t, "c.yaml:6: warning: agent.backend.reasoning: Anthropic (OpenAI SDK compatibility) ignores reasoning_effort, so it is not sent; extended thinking is thinking: {type: enabled, budget_tokens: N}", warnings[0].String())
}

// The round evaluator's keys warn when they cannot act.
func TestRoundEvaluatorKeysWithoutTheGate(t *testing.T) {
	_, warns, err := ParseWithWarnings([]byte("agents:\n  - id: a\n    backend: {model: m}\norchestrator:\n  round_evaluator_before_checklist: true\n  orchestrator_managed_round_evaluator: true\n"), "c.yaml")
	require.NoError(t, err)
	require.Len(t, warns, 2, "each key that does nothing says so")
	require.Contains(t, warns[0].String(), "runs only with voting_sensitivity: checklist_gated")
	_, warns, err = ParseWithWarnings([]byte("agents:\n  - id: a\n    backend: {model: m}\norchestrator:\n  voting_sensitivity: checklist_gated\n  orchestrator_managed_round_evaluator: true\n"), "c.yaml")
	require.NoError(t, err)
	require.Len(t, warns, 1)
	require.Contains(t, warns[0].String(), "without round_evaluator_before_checklist")
	_, warns, err = ParseWithWarnings([]byte("agents:\n  - id: a\n    backend: {model: m}\norchestrator:\n  voting_sensitivity: checklist_gated\n  round_evaluator_before_checklist: true\n"), "c.yaml")
	require.NoError(t, err)
	require.Empty(t, warns)
}

// skip_voting is a Conclave setting (flat, nested under coordination, and
// in the JSON input); skip_final_presentation resolves as MassGen resolves
// it.
func TestSkipSettings(t *testing.T) {
	const agents = "agents: [{id: a, backend: {model: m}}, {id: b, backend: {model: m}}]\n"
	tests := []struct {
		name     string
		orch     string
		skip     bool
		strategy FinalAnswerStrategy
		// report is the one warning or note expected ("" = none), note
		// whether it is a note.
		report string
		note   bool
		err    string
	}{
		{name: "skip_voting", orch: "{skip_voting: true}", skip: true, strategy: FinalWinnerPresent},
		{name: "skip_voting nested", orch: "{coordination: {skip_voting: true}}", skip: true, strategy: FinalWinnerPresent},
		{name: "skip_voting twice", orch: "{skip_voting: true, coordination: {skip_voting: false}}", err: "skip_voting is also set"},
		{name: "skip_voting not a bool", orch: "{skip_voting: sometimes}", err: "skip_voting"},
		{name: "skip_final_presentation", orch: "{skip_final_presentation: true}", strategy: FinalWinnerReuse,
			report: "honoured as final_answer_strategy: winner_reuse", note: true},
		{name: "skip_final_presentation off", orch: "{skip_final_presentation: false}", strategy: FinalWinnerPresent},
		{name: "final_answer_strategy wins", orch: "{skip_final_presentation: true, final_answer_strategy: synthesize}", strategy: FinalSynthesize,
			report: "final_answer_strategy: synthesize is also set and wins"},
		{name: "with skip_voting there is no presentation stage", orch: "{skip_voting: true, coordination: {skip_final_presentation: true}, final_answer_strategy: synthesize}",
			skip: true, strategy: FinalWinnerReuse, report: "with skip_voting it wins over final_answer_strategy: synthesize", note: true},
		{name: "decomposition presents", orch: "{coordination_mode: decomposition, skip_final_presentation: true}", strategy: FinalWinnerPresent,
			report: "ignored in decomposition mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warnings, err := ParseWithWarnings([]byte(agents+"orchestrator: "+tt.orch+"\n"), "c.yaml")
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			requireJSONRoundTrip(t, c)
			assert.Equal(t, tt.skip, c.Orchestrator.SkipVoting)
			assert.Equal(t, tt.strategy, c.Orchestrator.FinalAnswerStrategy)
			if tt.report == "" {
				assert.Empty(t, warnings)
				return
			}
			require.Len(t, warnings, 1)
			assert.Contains(t, warnings[0].Message, tt.report)
			assert.Equal(t, tt.note, warnings[0].Note, warnings[0].String())
		})
	}

	// The workflow input takes it as is.
	in := []byte(`{"agents": [{"id": "a", "backend": {"model": "m"}}], "orchestrator": {"skip_voting": true}}`)
	assert.Empty(t, CheckJSON(in, reflect.TypeFor[Config]()))
	var c Config
	require.NoError(t, json.Unmarshal(in, &c))
	assert.True(t, c.Orchestrator.SkipVoting)
	assert.Equal(t, 2, *c.Orchestrator.MaxNewAnswersPerAgent, "the other settings keep their defaults")
}

// NoVoteRound: skip_voting, or MassGen's quick synthesize path; with
// defer_voting_until_all_answered the same settings are the ensemble
// pattern, which votes.
func TestNoVoteRound(t *testing.T) {
	one, two := 1, 2
	quick := func(o *Orchestrator) {
		o.DisableInjection, o.MaxNewAnswersPerAgent, o.FinalAnswerStrategy = true, &one, FinalSynthesize
	}
	tests := []struct {
		name  string
		set   func(o *Orchestrator)
		quick bool
		want  bool
	}{
		{"defaults vote", func(*Orchestrator) {}, false, false},
		{"skip_voting", func(o *Orchestrator) { o.SkipVoting = true }, false, true},
		{"quick synthesize", quick, true, true},
		{"quick synthesize with injection", func(o *Orchestrator) { quick(o); o.DisableInjection = false }, true, true},
		{"ensemble pattern votes", func(o *Orchestrator) { quick(o); o.DeferVotingUntilAllAnswered = true }, false, false},
		{"two answers each vote", func(o *Orchestrator) { quick(o); o.MaxNewAnswersPerAgent = &two }, false, false},
		{"unlimited answers vote", func(o *Orchestrator) { quick(o); o.MaxNewAnswersPerAgent = nil }, false, false},
		{"winner_present votes", func(o *Orchestrator) { quick(o); o.FinalAnswerStrategy = FinalWinnerPresent }, false, false},
		{"decomposition stops", func(o *Orchestrator) { quick(o); o.CoordinationMode = ModeDecomposition }, false, false},
		{"skip_voting in decomposition", func(o *Orchestrator) { o.CoordinationMode, o.SkipVoting = ModeDecomposition, true }, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOrchestrator()
			tt.set(&o)
			assert.Equal(t, tt.quick, o.QuickSynthesize())
			assert.Equal(t, tt.want, o.NoVoteRound())
			assert.Equal(t, tt.want, o.VerdictOptions().SkipVoting)
		})
	}
}

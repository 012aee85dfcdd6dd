// Package config reads, defaults and validates Conclave's YAML configuration:
// the agents, the orchestrator settings of MassGen's coordination (seed 001)
// plus Conclave's own, and optional token prices.
//
// A parsed Config travels inside Temporal workflow inputs as JSON, so every
// type carries identical yaml and json tags, round-trips through encoding/json
// unchanged, and never holds a secret: backends name the environment variable
// that holds their API key (api_key_env) instead of carrying the key.
//
// The package is pure (no I/O besides Load) so workflows may import it.
package config

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/conclave-ai/conclave/engine/coord"
)

// Config is a whole Conclave configuration.
type Config struct {
	// Agents run in parallel on one task, in configuration order; that order
	// breaks ties in consensus and timeouts. The YAML form `agent:` (exactly
	// one agent, for step mode) is folded into this list by Parse.
	Agents       []Agent      `yaml:"agents" json:"agents"`
	Orchestrator Orchestrator `yaml:"orchestrator" json:"orchestrator"`
	// Prices are USD per million tokens, keyed by model name, used only to
	// report cost. A nil map and an empty one are kept apart so JSON
	// round-trips exactly; both mean "no prices".
	Prices map[string]coord.Price `yaml:"prices" json:"prices"`
}

// Agent is one participant of the coordination.
type Agent struct {
	// ID names the agent in storage keys and status; models never see it
	// (they see anonymous agent1..agentN).
	ID      string  `yaml:"id" json:"id"`
	Backend Backend `yaml:"backend" json:"backend"`
	// SystemMessage is prepended to the agent's context; empty means none.
	SystemMessage string `yaml:"system_message,omitempty" json:"system_message,omitempty"`
	// Subtask is the agent's share of the task in decomposition mode.
	Subtask string `yaml:"subtask,omitempty" json:"subtask,omitempty"`
}

// Backend says which model serves an agent and how to reach it.
type Backend struct {
	// Type names the provider (see Providers): openai, claude, gemini, grok,
	// vllm, … Every type is reached through its OpenAI-compatible chat API;
	// the type supplies the default base_url and api_key_env.
	Type  string `yaml:"type" json:"type"`
	Model string `yaml:"model" json:"model"`
	// BaseURL overrides the provider's endpoint (vLLM, Ollama, LiteLLM, …).
	BaseURL string `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	// APIKeyEnv is the name of the environment variable holding the key. The
	// worker that runs the agent reads it, so the key stays out of workflow
	// history and session files. Empty (keyless endpoints only) sends none.
	APIKeyEnv   string   `yaml:"api_key_env" json:"api_key_env"`
	Temperature *float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	MaxTokens   *int     `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	TopP        *float64 `yaml:"top_p,omitempty" json:"top_p,omitempty"`
	// Reasoning and Text keep MassGen's (Responses API) spelling; they are
	// sent as reasoning_effort and verbosity.
	Reasoning *Reasoning `yaml:"reasoning,omitempty" json:"reasoning,omitempty"`
	Text      *Text      `yaml:"text,omitempty" json:"text,omitempty"`
	// ExtraBody is merged into the request body as is, for provider
	// parameters Conclave does not model (top_k, search_parameters, …).
	ExtraBody ExtraBody `yaml:"extra_body,omitempty" json:"extra_body,omitempty"`
	// Tools are the agent's tools beyond its workspace, in MassGen's
	// spelling: MCP servers and the sandboxed command tool (mcp.go).
	Tools `yaml:",inline"`
}

// Reasoning is how hard a reasoning model thinks.
type Reasoning struct {
	// Effort is sent as reasoning_effort: minimal, low, medium or high (and
	// whatever else the provider documents). MassGen's reasoning.summary
	// has no chat-API counterpart: it is reported, not kept.
	Effort string `yaml:"effort,omitempty" json:"effort,omitempty"`
}

// Text holds output settings.
type Text struct {
	// Verbosity is sent as verbosity (low, medium, high) where the provider
	// takes it.
	Verbosity string `yaml:"verbosity,omitempty" json:"verbosity,omitempty"`
}

// Orchestrator holds the coordination settings. The first group keeps the
// names and defaults of MassGen's orchestrator config (seed 001's quick
// reference) so MassGen users can carry their settings over; the second group
// is Conclave's. Nullable settings are pointers: nil (YAML null) is a value of
// its own, usually "unlimited", distinct from "not set".
type Orchestrator struct {
	CoordinationMode  CoordinationMode  `yaml:"coordination_mode" json:"coordination_mode"`
	VotingSensitivity VotingSensitivity `yaml:"voting_sensitivity" json:"voting_sensitivity"`
	// DisableInjection turns off peer-answer propagation: agents refine
	// independently until they vote.
	DisableInjection               bool `yaml:"disable_injection" json:"disable_injection"`
	FairnessEnabled                bool `yaml:"fairness_enabled" json:"fairness_enabled"`
	FairnessLeadCapAnswers         int  `yaml:"fairness_lead_cap_answers" json:"fairness_lead_cap_answers"`
	MaxMidstreamInjectionsPerRound int  `yaml:"max_midstream_injections_per_round" json:"max_midstream_injections_per_round"`
	DeferPeerUpdatesUntilRestart   bool `yaml:"defer_peer_updates_until_restart" json:"defer_peer_updates_until_restart"`
	// AllowMidstreamPeerUpdatesBeforeChecklistSubmit keeps peer updates
	// flowing, under defer_peer_updates_until_restart, until a gated step's
	// first accepted checklist; nil means false.
	AllowMidstreamPeerUpdatesBeforeChecklistSubmit *bool `yaml:"allow_midstream_peer_updates_before_checklist_submit" json:"allow_midstream_peer_updates_before_checklist_submit"`
	// MaxNewAnswersPerAgent and MaxNewAnswersGlobal: nil means unlimited.
	MaxNewAnswersPerAgent       *int `yaml:"max_new_answers_per_agent" json:"max_new_answers_per_agent"`
	MaxNewAnswersGlobal         *int `yaml:"max_new_answers_global" json:"max_new_answers_global"`
	DeferVotingUntilAllAnswered bool `yaml:"defer_voting_until_all_answered" json:"defer_voting_until_all_answered"`
	MaxChecklistCallsPerRound   int  `yaml:"max_checklist_calls_per_round" json:"max_checklist_calls_per_round"`
	// AnswerNoveltyRequirement refuses new answers too close to one in
	// context: lenient (exact duplicates only), balanced (over 70% of its
	// words), strict (over 50%).
	AnswerNoveltyRequirement NoveltyRequirement `yaml:"answer_novelty_requirement" json:"answer_novelty_requirement"`
	// Per-round timeouts, in seconds (0: none), MassGen's timeout_settings:
	// the soft timeout of an agent's first step and of its later steps, and
	// the grace after it, when only workflow tools are allowed.
	InitialRoundTimeoutSeconds    int  `yaml:"initial_round_timeout_seconds" json:"initial_round_timeout_seconds"`
	SubsequentRoundTimeoutSeconds int  `yaml:"subsequent_round_timeout_seconds" json:"subsequent_round_timeout_seconds"`
	RoundTimeoutGraceSeconds      int  `yaml:"round_timeout_grace_seconds" json:"round_timeout_grace_seconds"`
	ChecklistFirstAnswer          bool `yaml:"checklist_first_answer" json:"checklist_first_answer"`

	Scheduling          Scheduling          `yaml:"scheduling" json:"scheduling"`
	Consensus           ConsensusRule       `yaml:"consensus" json:"consensus"`
	MaxRevoteRounds     int                 `yaml:"max_revote_rounds" json:"max_revote_rounds"`
	UpdateMode          UpdateMode          `yaml:"update_mode" json:"update_mode"`
	FinalAnswerStrategy FinalAnswerStrategy `yaml:"final_answer_strategy" json:"final_answer_strategy"`
	// SkipVoting is MassGen's skip_voting: coordination ends as soon as
	// every alive agent has an answer, without a vote (or stop) round, and
	// the presenter combines the answers (see NoVoteRound).
	SkipVoting bool `yaml:"skip_voting" json:"skip_voting"`
	// Presenter is the agent that writes the final answer in decomposition
	// mode and in a run without a vote round (NoVoteRound); empty means the
	// first alive agent. Voting mode presents the winner.
	Presenter                  string `yaml:"presenter,omitempty" json:"presenter,omitempty"`
	OrchestratorTimeoutSeconds int    `yaml:"orchestrator_timeout_seconds" json:"orchestrator_timeout_seconds"`
	MaxStepsPerAgent           int    `yaml:"max_steps_per_agent" json:"max_steps_per_agent"`
	MaxEnforcementAttempts     int    `yaml:"max_enforcement_attempts" json:"max_enforcement_attempts"`

	// The round evaluator of seed 001 (docs/quality-gates.md): before round
	// 2+, one fresh-eyes run writes a critique packet and a task plan for
	// the next round. RoundEvaluatorBeforeChecklist turns it on;
	// OrchestratorManagedRoundEvaluator has the workflow launch it (else
	// the agents are told to expect it); the pressure shapes its prompt.
	RoundEvaluatorBeforeChecklist        bool                   `yaml:"round_evaluator_before_checklist" json:"round_evaluator_before_checklist"`
	OrchestratorManagedRoundEvaluator    bool                   `yaml:"orchestrator_managed_round_evaluator" json:"orchestrator_managed_round_evaluator"`
	RoundEvaluatorTransformationPressure TransformationPressure `yaml:"round_evaluator_transformation_pressure" json:"round_evaluator_transformation_pressure"`
}

// TransformationPressure is how hard the round evaluator pushes for a
// larger thesis shift before settling for incremental refinement.
type TransformationPressure string

// Transformation pressures (round_evaluator_transformation_pressure).
const (
	PressureGentle     TransformationPressure = "gentle"
	PressureBalanced   TransformationPressure = "balanced"
	PressureAggressive TransformationPressure = "aggressive"
)

// BackendOpenAI is OpenAI's own API, the default backend type.
const BackendOpenAI = "openai"

// DefaultAPIKeyEnv is the variable read when a backend names none.
const DefaultAPIKeyEnv = "OPENAI_API_KEY"

// CoordinationMode selects what a terminal action means.
type CoordinationMode string

// Coordination modes: agents compete and vote, or split the task and stop.
const (
	ModeVoting        CoordinationMode = "voting"
	ModeDecomposition CoordinationMode = "decomposition"
)

// VotingSensitivity is MassGen's voting policy.
type VotingSensitivity string

// Voting sensitivities. SensitivityChecklistGated turns on seed 001's
// checklist policy (docs/quality-gates.md): votes, stops and new answers
// go through submit_checklist.
const (
	SensitivityBalanced       VotingSensitivity = "balanced"
	SensitivityChecklistGated VotingSensitivity = "checklist_gated"
)

// NoveltyRequirement is how different a new answer must be from the
// answers in context (answer_novelty_requirement).
type NoveltyRequirement string

// Novelty requirements: MassGen's lenient default refuses exact duplicates
// only.
const (
	NoveltyLenient  NoveltyRequirement = "lenient"
	NoveltyBalanced NoveltyRequirement = "balanced"
	NoveltyStrict   NoveltyRequirement = "strict"
)

// MaxOverlap is the share of a new answer's distinct words that may
// already be in one answer in context; 0 for lenient (no limit).
func (n NoveltyRequirement) MaxOverlap() float64 {
	switch n {
	case NoveltyBalanced:
		return 0.7
	case NoveltyStrict:
		return 0.5
	}
	return 0
}

// Scheduling selects when agents are relaunched.
type Scheduling string

// Schedulings: relaunch each agent as soon as its step ends (MassGen's
// behaviour), or wait for every agent at a barrier (step mode's rounds).
const (
	SchedulingAsync  Scheduling = "async"
	SchedulingRounds Scheduling = "rounds"
)

// ConsensusRule decides when votes settle a winner.
type ConsensusRule string

// Consensus rules; see engine/coord for the exact definitions.
const (
	ConsensusMajority  ConsensusRule = "majority"
	ConsensusPlurality ConsensusRule = "plurality"
)

// UpdateMode selects how a running agent learns of peers' new answers.
type UpdateMode string

// Update modes: inject at the next safe point (seed 003), or cancel and
// relaunch the agent.
const (
	UpdateInject  UpdateMode = "inject"
	UpdateRestart UpdateMode = "restart"
)

// FinalAnswerStrategy selects how the final answer is produced.
type FinalAnswerStrategy string

// Final answer strategies: the winner presents its answer, the winner
// synthesizes all answers, or the winner's stored answer is used as is.
const (
	FinalWinnerPresent FinalAnswerStrategy = "winner_present"
	FinalSynthesize    FinalAnswerStrategy = "synthesize"
	FinalWinnerReuse   FinalAnswerStrategy = coord.StrategyWinnerReuse
)

// DefaultOrchestrator returns the orchestrator settings a config starts from.
// Parse decodes YAML on top of it, so an absent key takes its default while
// an explicit false, 0 or null is kept as written.
func DefaultOrchestrator() Orchestrator {
	perAgent, global := 2, 8
	return Orchestrator{
		CoordinationMode:               ModeVoting,
		VotingSensitivity:              SensitivityBalanced,
		FairnessEnabled:                true,
		FairnessLeadCapAnswers:         2,
		MaxMidstreamInjectionsPerRound: 2,
		MaxNewAnswersPerAgent:          &perAgent,
		MaxNewAnswersGlobal:            &global,
		MaxChecklistCallsPerRound:      1,
		AnswerNoveltyRequirement:       NoveltyLenient,
		Scheduling:                     SchedulingAsync,
		Consensus:                      ConsensusMajority,
		MaxRevoteRounds:                2,
		UpdateMode:                     UpdateInject,
		FinalAnswerStrategy:            FinalWinnerPresent,
		OrchestratorTimeoutSeconds:     1800,
		MaxStepsPerAgent:               10,
		MaxEnforcementAttempts:         3,

		RoundEvaluatorTransformationPressure: PressureBalanced,
	}
}

// ApplyDefaults fills the settings whose empty value is never meaningful: the
// enums, and backend.type, base_url and api_key_env from the provider. It
// leaves numbers, booleans and nullable settings alone, because 0, false and
// null are legitimate choices there; their defaults come from
// DefaultOrchestrator, which Parse and JSON decoding start from. It is
// idempotent.
func (c *Config) ApplyDefaults() {
	d := DefaultOrchestrator()
	o := &c.Orchestrator
	setIfEmpty(&o.CoordinationMode, d.CoordinationMode)
	setIfEmpty(&o.VotingSensitivity, d.VotingSensitivity)
	setIfEmpty(&o.Scheduling, d.Scheduling)
	setIfEmpty(&o.Consensus, d.Consensus)
	setIfEmpty(&o.UpdateMode, d.UpdateMode)
	setIfEmpty(&o.FinalAnswerStrategy, d.FinalAnswerStrategy)
	setIfEmpty(&o.AnswerNoveltyRequirement, d.AnswerNoveltyRequirement)
	setIfEmpty(&o.RoundEvaluatorTransformationPressure, d.RoundEvaluatorTransformationPressure)
	for i := range c.Agents {
		c.Agents[i].Backend.applyDefaults()
	}
}

// applyDefaults fills base_url and api_key_env from the provider. openai
// keeps an empty base_url (the client's default), as configs always have.
func (b *Backend) applyDefaults() {
	setIfEmpty(&b.Type, BackendOpenAI)
	p, ok := LookupProvider(b.Type)
	if !ok {
		return
	}
	if b.Type == "azure_openai" {
		b.BaseURL = normalizeAzure(b.BaseURL)
	}
	setIfEmpty(&b.BaseURL, p.BaseURL)
	env := p.KeyEnv
	if b.Type == "chatcompletion" {
		env = keyEnvForHost(b.BaseURL)
	}
	setIfEmpty(&b.APIKeyEnv, env)
}

func setIfEmpty[T ~string](field *T, value T) {
	if *field == "" {
		*field = value
	}
}

// UnmarshalJSON starts from DefaultOrchestrator so that hand-written workflow
// input (temporal workflow start --input) means what the same keys mean in
// YAML: an absent setting takes its default, an explicit null stays null.
func (c *Config) UnmarshalJSON(data []byte) error {
	type plain Config // drops this method, avoiding recursion
	p := plain{Orchestrator: DefaultOrchestrator()}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*c = Config(p)
	return nil
}

// Agent returns the agent with the given id.
func (c *Config) Agent(id string) (*Agent, bool) {
	for i := range c.Agents {
		if c.Agents[i].ID == id {
			return &c.Agents[i], true
		}
	}
	return nil, false
}

// AgentIDs returns the agent ids in configuration order.
func (c *Config) AgentIDs() []string {
	ids := make([]string, len(c.Agents))
	for i, a := range c.Agents {
		ids[i] = a.ID
	}
	return ids
}

// Single returns the only agent, for step mode, which runs one agent for one
// step and leaves coordination to an external orchestrator.
func (c *Config) Single() (*Agent, error) {
	if n := len(c.Agents); n != 1 {
		return nil, fmt.Errorf("step mode needs exactly one agent; the config has %d (use `agent:` with one agent, or run coordination instead)", n)
	}
	return &c.Agents[0], nil
}

// Price returns the input and output price of model in USD per million
// tokens. The match is exact: a dated model name needs its own entry.
func (c *Config) Price(model string) (in, out float64, ok bool) {
	p, ok := c.Prices[model]
	return p.Input, p.Output, ok
}

// RoundTimeout is the soft timeout of an agent step — initial for the
// agent's first step, subsequent for later ones — and the grace after it
// (the hard timeout is their sum). A zero soft timeout means none.
func (o Orchestrator) RoundTimeout(firstStep bool) (soft, grace time.Duration) {
	n := o.SubsequentRoundTimeoutSeconds
	if firstStep {
		n = o.InitialRoundTimeoutSeconds
	}
	if n <= 0 {
		return 0, 0
	}
	return time.Duration(n) * time.Second, time.Duration(max(o.RoundTimeoutGraceSeconds, 0)) * time.Second
}

// Timeout is orchestrator_timeout_seconds as a duration.
func (o Orchestrator) Timeout() time.Duration {
	return time.Duration(o.OrchestratorTimeoutSeconds) * time.Second
}

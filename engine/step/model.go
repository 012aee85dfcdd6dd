package step

import (
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
)

// ModelFactory builds an agent's model. A worker's reads keys from its own
// environment within its egress rules (NewModel behind the worker's checks,
// wrapped by telemetry); tests point it at the scripted server.
type ModelFactory func(cfg *config.Config, agent *config.Agent) (llm.Model, error)

// NewModel builds the model of one configured agent, reading its key from
// the environment variable the config names. Workers and step mode call it;
// the key never leaves the process, and goes only where egress allows (every
// request, redirect and connection is checked against it).
func NewModel(cfg *config.Config, agent *config.Agent, egress config.Egress, getenv func(string) string) (llm.Model, error) {
	b := agent.Backend
	params := llm.Params{TopP: b.TopP, ExtraBody: b.ExtraBody}
	if b.Reasoning != nil {
		params.ReasoningEffort = b.Reasoning.Effort
	}
	if b.Text != nil {
		params.Verbosity = b.Text.Verbosity
	}
	base, err := b.ResolveBaseURL(getenv)
	if err != nil {
		return nil, err
	}
	limits, err := llm.LimitsFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	limits.CallArgBytes = tools.MaxCallBytes
	return llm.NewFromEnv(llm.Config{
		Model: b.Model, BaseURL: base, APIKeyEnv: b.APIKeyEnv, Prices: cfg.Prices,
		KeyRequired: b.KeyRequired(), Params: params, Limits: limits, Guard: egress,
	}, getenv)
}

package step

import (
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/llm"
)

// NewModel builds the model of one configured agent, reading its key from
// the environment variable the config names. Workers and step mode call it;
// the key never leaves the process.
func NewModel(cfg *config.Config, agent *config.Agent, getenv func(string) string) (llm.Model, error) {
	prices := llm.Prices{}
	for name, p := range cfg.Prices {
		prices[name] = llm.Price{Input: p.Input, Output: p.Output}
	}
	return llm.NewFromEnv(llm.Config{
		Model: agent.Backend.Model, BaseURL: agent.Backend.BaseURL,
		APIKeyEnv: agent.Backend.APIKeyEnv, Prices: prices,
	}, getenv)
}

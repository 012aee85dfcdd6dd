package config

import "github.com/conclave-ai/conclave/engine/coord"

// Limits turns the orchestrator's answer settings into coord's rules.
// Fairness applies only when fairness_enabled is true.
func (o Orchestrator) Limits() coord.Limits {
	lim := coord.Limits{
		MaxNewAnswersPerAgent: o.MaxNewAnswersPerAgent,
		MaxNewAnswersGlobal:   o.MaxNewAnswersGlobal,
		MaxStepsPerAgent:      o.MaxStepsPerAgent,
	}
	if o.FairnessEnabled {
		lead := o.FairnessLeadCapAnswers
		lim.FairnessLeadCap = &lead
	}
	return lim
}

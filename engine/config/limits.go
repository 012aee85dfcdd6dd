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

// VerdictOptions turns the orchestrator's settings into the rules that end
// coordination (coord.Judge, coord.Stalled), so the workflow and step
// mode's `session status` read them the same way.
func (o Orchestrator) VerdictOptions() coord.VerdictOptions {
	return coord.VerdictOptions{
		Rule:            coord.Rule(o.Consensus),
		MaxRevoteRounds: o.MaxRevoteRounds,
		Decomposition:   o.CoordinationMode == ModeDecomposition,
		Presenter:       o.Presenter,
	}
}

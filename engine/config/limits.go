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
		SkipVoting:      o.NoVoteRound(),
	}
}

// NoVoteRound reports whether coordination ends as soon as every alive
// agent has an answer, with no vote (or stop) round: skip_voting, or
// MassGen's quick synthesize path (voting mode, final_answer_strategy
// synthesize, max_new_answers_per_agent 1 and
// defer_voting_until_all_answered false). There each agent gives one
// answer and a vote could only pick one of them before the presenter
// combines them all anyway, so MassGen skips it. With
// defer_voting_until_all_answered true the same settings are MassGen's
// ensemble pattern, which votes once every agent has answered.
func (o Orchestrator) NoVoteRound() bool {
	return o.SkipVoting || o.QuickSynthesize()
}

// QuickSynthesize reports whether the settings are MassGen's quick
// synthesize path (see NoVoteRound). disable_injection does not enter
// into it: an agent sees no peer answer before its own first one, and
// with one answer each there is no second.
func (o Orchestrator) QuickSynthesize() bool {
	return o.CoordinationMode == ModeVoting &&
		o.FinalAnswerStrategy == FinalSynthesize &&
		o.MaxNewAnswersPerAgent != nil && *o.MaxNewAnswersPerAgent == 1 &&
		!o.DeferVotingUntilAllAnswered
}

// Rules are the settings a session's coordination state machine reads,
// fixed when the session starts. Decomposition always synthesizes (the
// presenter assembles the parts); without a vote round there is no
// winner's answer to present, so the presenter synthesizes all answers
// unless winner_reuse asks for its stored answer as is. A failing
// model-backed presentation in voting mode falls back to the winner's
// stored answer, so the agreed answer is never lost to a failing presenter.
func (o Orchestrator) Rules() coord.Rules {
	r := coord.Rules{
		Verdict:          o.VerdictOptions(),
		Limits:           o.Limits(),
		Rounds:           o.Scheduling == SchedulingRounds,
		DeferVoting:      o.DeferVotingUntilAllAnswered,
		Restart:          o.UpdateMode == UpdateRestart && !o.DisableInjection,
		ManagedEvaluator: o.VotingSensitivity == SensitivityChecklistGated && o.RoundEvaluatorBeforeChecklist && o.OrchestratorManagedRoundEvaluator,
		Strategy:         string(o.FinalAnswerStrategy),
	}
	switch {
	case o.CoordinationMode == ModeDecomposition:
		r.Strategy = string(FinalSynthesize)
	case r.Verdict.SkipVoting && o.FinalAnswerStrategy != FinalWinnerReuse:
		r.Strategy = string(FinalSynthesize)
	}
	if o.CoordinationMode != ModeDecomposition && r.Strategy != coord.StrategyWinnerReuse {
		r.Fallback = coord.StrategyWinnerReuse
	}
	return r
}

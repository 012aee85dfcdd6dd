package workflows

import (
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// launchPlan is one agent step to start now.
type launchPlan struct {
	Agent string
	Mode  coord.Mode
	// Tally is the anonymous tally shown on a re-vote (nil otherwise).
	Tally map[string]int
	// AutoStop, when set, stops the agent without a model call with this
	// summary (coord.AutoStop, decomposition mode's limits).
	AutoStop string
}

// planLaunches decides which agents start a step now; it reads only its
// arguments, so it is the same on every replay. revote lists the agents owed
// a re-vote step (shown tally); otherwise coord.Relaunch decides: agents with
// no action, answered agents, stale voters and stale stoppers, minus running
// and failed ones and those that used up max_steps_per_agent.
//
// Scheduling async relaunches an agent as soon as its step ends; rounds
// launches only at the barrier, when no agent step is running (step mode's
// rounds, seed 000).
//
// paced applies seed 001's pre-start gates (limitsChange): a decomposition
// agent at a limit is launched to stop automatically (coord.AutoStop), and
// an agent at the fairness lead cap waits while a slower peer can catch up
// (coord.Paused). Without it, runs recorded before replay as they ran: no
// auto-stop, and an agent at the lead cap is launched vote-only.
func planLaunches(l coord.Ledger, o config.Orchestrator, revote []string, tally map[string]int, paced bool) []launchPlan {
	if o.Scheduling == config.SchedulingRounds && coord.AnyRunning(l) {
		return nil
	}
	lim := o.Limits()
	var plans []launchPlan
	if len(revote) > 0 {
		for _, id := range revote {
			if a := l.Find(id); a != nil && !a.Failed && !a.Running && !coord.StepsExhausted(*a, lim) {
				plans = append(plans, launchPlan{Agent: id, Mode: coord.ModeVoteOnly, Tally: tally})
			}
		}
		return plans
	}
	decomposition := o.CoordinationMode == config.ModeDecomposition
	for _, id := range coord.Relaunch(l) {
		if coord.StepsExhausted(*l.Find(id), lim) {
			continue
		}
		if paced && decomposition {
			if why := coord.AutoStop(l, id, lim); why != "" {
				plans = append(plans, launchPlan{Agent: id, Mode: coord.ModeDecomposition, AutoStop: why})
				continue
			}
		}
		if paced && coord.Paused(l, id, lim, decomposition) {
			continue // a slower peer is catching up
		}
		mode, ok := coord.NextMode(l, id, decomposition, lim)
		if !paced && mode == coord.ModeVoting {
			if can, _ := coord.CanAnswer(l, id, lim); !can {
				mode = coord.ModeVoteOnly // the lead cap, before limitsChange
			}
		}
		if !ok || (mode == coord.ModeVoteOnly && o.DeferVotingUntilAllAnswered && awaitingFirstAnswers(l, id, lim)) {
			continue // nothing to vote for yet, or peers still owe first answers
		}
		plans = append(plans, launchPlan{Agent: id, Mode: mode})
	}
	return plans
}

// awaitingFirstAnswers is defer_voting_until_all_answered's gate for a capped
// agent: some alive peer may still give its first answer (it is running, or
// has not acted yet), and the global cap does not already forbid that answer.
// A peer that voted without answering no longer holds anyone back, so the
// gate cannot deadlock.
func awaitingFirstAnswers(l coord.Ledger, self string, lim coord.Limits) bool {
	if m := lim.MaxNewAnswersGlobal; m != nil && coord.TotalAnswers(l) >= *m {
		return false
	}
	for _, p := range l.Agents {
		if p.ID != self && !p.Failed && p.AnswerCount == 0 && (p.Running || p.LastAction == coord.ActionNone) {
			return true
		}
	}
	return false
}

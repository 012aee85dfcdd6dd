package workflows

import (
	"fmt"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// launchPlan is one agent step to start now.
type launchPlan struct {
	Agent string
	Mode  coord.Mode
	// Tally is the anonymous tally shown on a re-vote (nil otherwise).
	Tally map[string]int
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
func planLaunches(l coord.Ledger, o config.Orchestrator, revote []string, tally map[string]int) []launchPlan {
	if o.Scheduling == config.SchedulingRounds && anyRunning(l) {
		return nil
	}
	lim := o.Limits()
	var plans []launchPlan
	if len(revote) > 0 {
		for _, id := range revote {
			if a := agentOf(l, id); a != nil && !a.Failed && !a.Running && !coord.StepsExhausted(*a, lim) {
				plans = append(plans, launchPlan{Agent: id, Mode: coord.ModeVoteOnly, Tally: tally})
			}
		}
		return plans
	}
	for _, id := range coord.Relaunch(l) {
		if coord.StepsExhausted(*agentOf(l, id), lim) {
			continue
		}
		mode, ok := coord.NextMode(l, id, o.CoordinationMode == config.ModeDecomposition, lim)
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
	if m := lim.MaxNewAnswersGlobal; m != nil && totalAnswers(l) >= *m {
		return false
	}
	for _, p := range l.Agents {
		if p.ID != self && !p.Failed && p.AnswerCount == 0 && (p.Running || p.LastAction == coord.ActionNone) {
			return true
		}
	}
	return false
}

// verdict is what the ledger says about the end of coordination.
type verdict struct {
	Done   bool
	Status string // StatusConsensus, StatusPlurality or StatusFailed
	Winner string
	Reason string
	// Revote asks for another re-vote round (majority split).
	Revote bool
}

// judge applies the completion rules after a step: every agent failed → failed;
// decomposition → done when every alive agent holds a stop that is not stale;
// voting → coord.Decide under the configured rule, a majority split going to
// re-votes (coord.ResolveSplit) until max_revote_rounds, then plurality.
func judge(l coord.Ledger, o config.Orchestrator, revoteRound int) verdict {
	alive := 0
	for _, a := range l.Agents {
		if !a.Failed {
			alive++
		}
	}
	if alive == 0 {
		return verdict{Done: true, Status: StatusFailed, Reason: "every agent failed"}
	}
	if o.CoordinationMode == config.ModeDecomposition {
		for _, a := range l.Agents {
			if a.Failed {
				continue
			}
			if a.Running || a.LastAction != coord.ActionStop || coord.StaleStop(l, a.Stop) {
				return verdict{Reason: fmt.Sprintf("waiting for %s to stop", a.ID)}
			}
		}
		p := presenter(l, o)
		return verdict{Done: true, Status: StatusConsensus, Winner: p,
			Reason: "every alive agent stopped; " + p + " presents"}
	}
	var out coord.Outcome
	if o.Consensus == config.ConsensusPlurality {
		out = coord.Decide(l, coord.RulePlurality)
	} else {
		var again bool
		again, out = coord.ResolveSplit(l, revoteRound, o.MaxRevoteRounds)
		if again {
			return verdict{Revote: true, Reason: out.Reason}
		}
	}
	if !out.Reached {
		return verdict{Reason: out.Reason}
	}
	status := StatusConsensus
	if out.Split {
		status = StatusPlurality
	}
	return verdict{Done: true, Status: status, Winner: out.Winner, Reason: out.Reason}
}

// stalled decides a session in which nothing runs and nothing can be
// launched (max_steps_per_agent reached, for one) the way a timeout would:
// most fresh votes, else the newest answer. The status is plurality; without
// any answer the session failed.
func stalled(l coord.Ledger, o config.Orchestrator, answerOrder []string) verdict {
	winner, how, err := coord.TimeoutWinner(l, answerOrder)
	if err != nil {
		return verdict{Done: true, Status: StatusFailed,
			Reason: "coordination stalled before any agent submitted an answer (no step can be launched): " +
				"raise max_steps_per_agent or check why the agents' steps failed"}
	}
	if o.CoordinationMode == config.ModeDecomposition {
		winner = presenter(l, o)
		how = "the decomposition presenter"
	}
	return verdict{Done: true, Status: StatusPlurality, Winner: winner,
		Reason: fmt.Sprintf("stalled: no step can be launched and there is no consensus; %s wins by %s", winner, how)}
}

// presenter is decomposition mode's presenter: the configured one, else the
// first alive agent (the first agent when all failed).
func presenter(l coord.Ledger, o config.Orchestrator) string {
	if o.Presenter != "" {
		return o.Presenter
	}
	for _, a := range l.Agents {
		if !a.Failed {
			return a.ID
		}
	}
	if len(l.Agents) > 0 {
		return l.Agents[0].ID
	}
	return ""
}

// anonymousTally turns a tally by real id into the tally models see.
func anonymousTally(l coord.Ledger) map[string]int {
	ids := make([]string, len(l.Agents))
	for i, a := range l.Agents {
		ids[i] = a.ID
	}
	anon := coord.AnonymousIDs(ids)
	votes := coord.Tally(l)
	out := make(map[string]int)
	for _, a := range l.Agents { // configuration order, never map order
		if n := votes[a.ID]; n > 0 {
			out[anon[a.ID]] = n
		}
	}
	return out
}

func agentOf(l coord.Ledger, id string) *coord.Agent {
	for i := range l.Agents {
		if l.Agents[i].ID == id {
			return &l.Agents[i]
		}
	}
	return nil
}

func anyRunning(l coord.Ledger) bool {
	for _, a := range l.Agents {
		if a.Running {
			return true
		}
	}
	return false
}

func totalAnswers(l coord.Ledger) int {
	n := 0
	for _, a := range l.Agents {
		n += a.AnswerCount
	}
	return n
}

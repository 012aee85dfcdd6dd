package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// noVoteRoundChange is the workflow.GetVersion change id of sessions
// without a vote round (config.Orchestrator.NoVoteRound: skip_voting, or
// the quick synthesize path): coordination ends once every alive agent has
// an answer, nobody is launched to vote, and the presenter synthesizes
// with no_vote set. Runs recorded before it held a vote round with the
// quick synthesize settings (skip_voting did not exist), and replay so.
const noVoteRoundChange = "no-vote-round"

// decideNoVote decides, once per session, whether it runs without a vote
// round; a continued run keeps the decision it carries.
func (w *coordination) decideNoVote(ctx workflow.Context) {
	if w.in.State != nil || !w.orch.NoVoteRound() {
		return
	}
	w.state.NoVote = workflow.GetVersion(ctx, noVoteRoundChange, workflow.DefaultVersion, 1) == 1
}

// verdictOptions are the end-of-coordination rules of this session: the
// config's, without a vote round only when the session decided so.
func (w *coordination) verdictOptions() coord.VerdictOptions {
	o := w.orch.VerdictOptions()
	o.SkipVoting = w.state.NoVote
	if w.replaceFailedPresenter {
		o = o.WithoutFailedPresenter(w.state.Ledger)
	}
	return o
}

// plan decides the steps to launch now.
func (w *coordination) plan() []launchPlan {
	if w.state.NoVote {
		return planNoVoteLaunches(w.state.Ledger, w.orch)
	}
	return planLaunches(w.state.Ledger, w.orch, w.state.Revote, w.state.RevoteTally, w.paced)
}

// planNoVoteLaunches is planLaunches without a vote round: only alive
// agents without an answer step (coord.RelaunchFor), for their first
// answer; an answered agent is done. An agent that may not answer (the
// global cap is reached) or has used up max_steps_per_agent is not
// launched to vote instead: once nothing runs, the session is decided as
// a stall, by the presenter, with the answers there are.
func planNoVoteLaunches(l coord.Ledger, o config.Orchestrator) []launchPlan {
	if o.Scheduling == config.SchedulingRounds && coord.AnyRunning(l) {
		return nil
	}
	lim := o.Limits()
	mode := coord.ModeVoting
	if o.CoordinationMode == config.ModeDecomposition {
		mode = coord.ModeDecomposition
	}
	var plans []launchPlan
	for _, id := range coord.RelaunchFor(l, coord.VerdictOptions{SkipVoting: true}) {
		if coord.StepsExhausted(*l.Find(id), lim) {
			continue
		}
		if ok, _ := coord.CanAnswer(l, id, lim); !ok {
			continue
		}
		plans = append(plans, launchPlan{Agent: id, Mode: mode})
	}
	return plans
}

// presentStrategy is the final answer strategy of this session. Decomposition
// always synthesizes (the presenter assembles the parts). Without a vote
// round there is no winner's answer to present: the presenter synthesizes
// all answers, unless winner_reuse (or MassGen's skip_final_presentation)
// asks for its stored answer as is.
func (w *coordination) presentStrategy() config.FinalAnswerStrategy {
	s := w.orch.FinalAnswerStrategy
	switch {
	case w.orch.CoordinationMode == config.ModeDecomposition:
		return config.FinalSynthesize
	case w.state.NoVote && s != config.FinalWinnerReuse:
		return config.FinalSynthesize
	}
	return s
}

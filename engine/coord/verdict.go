package coord

import "fmt"

// How a coordination session ended: the Status of a Verdict, and of the
// Coordination workflow's result.
const (
	// StatusConsensus: a majority (or unanimous) agreement, or a
	// decomposition whose agents all stopped.
	StatusConsensus = "consensus"
	// StatusPlurality: plurality decided (rule plurality, re-votes used
	// up, or a stall).
	StatusPlurality = "plurality"
	// StatusTimeout: orchestrator_timeout_seconds ran out; the timeout
	// winner's stored answer is the final one.
	StatusTimeout   = "timeout"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// VerdictOptions are the orchestrator settings the end-of-coordination
// rules read (config.Orchestrator.VerdictOptions builds them).
type VerdictOptions struct {
	// Rule settles fresh votes; a majority split goes to re-votes.
	Rule Rule `json:"rule,omitempty"`
	// MaxRevoteRounds bounds the re-votes of a majority split; then
	// plurality decides.
	MaxRevoteRounds int `json:"max_revote_rounds,omitempty"`
	// Decomposition ends on stops instead of votes.
	Decomposition bool `json:"decomposition,omitempty"`
	// Presenter is decomposition's configured presenter ("" = the first
	// alive agent), and the presenter of a run without a vote round.
	Presenter string `json:"presenter,omitempty"`
	// SkipVoting: no vote (or stop) round; coordination is done once every
	// alive agent has an answer and the presenter presents (skip_voting,
	// or the quick synthesize path: config.Orchestrator.NoVoteRound).
	SkipVoting bool `json:"skip_voting,omitempty"`
}

// WithoutFailedPresenter is o with a configured presenter that has failed
// left out, so that Presenter falls back to the first alive agent
// (docs/config.md: "a presenter that failed is replaced"): an agent dropped
// for misbehaving would otherwise still write the final answer.
func (o VerdictOptions) WithoutFailedPresenter(l Ledger) VerdictOptions {
	if a := l.Find(o.Presenter); a != nil && a.Failed {
		o.Presenter = ""
	}
	return o
}

// Verdict is what the ledger says about the end of coordination.
type Verdict struct {
	Done   bool
	Status string // StatusConsensus, StatusPlurality or StatusFailed once Done
	Winner string // real id of the agent whose answer is presented
	Reason string // for logs and operators; names real ids
	// Revote asks for another re-vote round (a majority split).
	Revote bool
}

// Decided reports whether the verdict names a winner, by agreement or by
// plurality: coordination is over and the winner presents. status.json's
// "consensus" is narrower (StatusConsensus only); its "decided_by" says
// which.
func (v Verdict) Decided() bool {
	return v.Done && (v.Status == StatusConsensus || v.Status == StatusPlurality)
}

// Judge applies the completion rules to a ledger: every agent failed →
// failed; SkipVoting → done when every alive agent has an answer and no
// step runs, the presenter wins (NoVotePresenter); decomposition → done
// when every alive agent holds a stop that is not stale, the presenter
// wins; voting → Decide under the rule, a majority
// split going to re-votes (ResolveSplit) until MaxRevoteRounds, then
// plurality. revoteRound is how many re-votes were already held. A ledger
// without agents (a step-mode session nobody stepped yet) is not done.
func Judge(l Ledger, o VerdictOptions, revoteRound int) Verdict {
	if len(l.Agents) == 0 {
		return Verdict{Reason: "no agents yet"}
	}
	if Alive(l) == 0 {
		return Verdict{Done: true, Status: StatusFailed, Reason: "every agent failed"}
	}
	if o.SkipVoting {
		for _, a := range l.Agents {
			if a.Failed {
				continue
			}
			if a.Running || a.AnswerCount == 0 {
				return Verdict{Reason: fmt.Sprintf("no vote round: waiting for %s's answer", a.ID)}
			}
		}
		p := NoVotePresenter(l, o.Presenter)
		return Verdict{Done: true, Status: StatusConsensus, Winner: p,
			Reason: "no vote round: every alive agent answered; " + p + " presents"}
	}
	if o.Decomposition {
		for _, a := range l.Agents {
			if a.Failed {
				continue
			}
			if a.Running || a.LastAction != ActionStop || StaleStop(l, a.Stop) {
				return Verdict{Reason: fmt.Sprintf("waiting for %s to stop", a.ID)}
			}
		}
		p := Presenter(l, o.Presenter)
		return Verdict{Done: true, Status: StatusConsensus, Winner: p,
			Reason: "every alive agent stopped; " + p + " presents"}
	}
	var out Outcome
	if o.Rule == RulePlurality {
		out = Decide(l, RulePlurality)
	} else {
		var again bool
		again, out = ResolveSplit(l, revoteRound, o.MaxRevoteRounds)
		if again {
			return Verdict{Revote: true, Reason: out.Reason}
		}
	}
	return verdictOf(out)
}

// verdictOf turns a rule's outcome into a verdict: a split settled by
// plurality is a plurality win, anything else reached is consensus.
func verdictOf(out Outcome) Verdict {
	if !out.Reached {
		return Verdict{Reason: out.Reason}
	}
	status := StatusConsensus
	if out.Split {
		status = StatusPlurality
	}
	return Verdict{Done: true, Status: status, Winner: out.Winner, Reason: out.Reason}
}

// Stalled decides a session in which nothing runs and no agent can step
// (max_steps_per_agent reached, for one) the way a timeout would: most
// fresh votes, else the newest answer (see TimeoutWinner for answerOrder);
// in decomposition the presenter. The status is plurality; without any
// answer the session failed.
func Stalled(l Ledger, o VerdictOptions, answerOrder []string) Verdict {
	winner, how, err := TimeoutWinner(l, answerOrder)
	if err != nil {
		return Verdict{Done: true, Status: StatusFailed,
			Reason: "coordination stalled before any agent submitted an answer (no step can be launched): " +
				"raise max_steps_per_agent or check why the agents' steps failed"}
	}
	switch {
	case o.SkipVoting:
		winner = NoVotePresenter(l, o.Presenter)
		how = "being the presenter of a run without a vote round"
	case o.Decomposition:
		winner = Presenter(l, o.Presenter)
		how = "the decomposition presenter"
	}
	return Verdict{Done: true, Status: StatusPlurality, Winner: winner,
		Reason: fmt.Sprintf("stalled: no step can be launched and there is no consensus; %s wins by %s", winner, how)}
}

// Presenter is decomposition mode's presenter: the configured one, else
// the first alive agent (the first agent when all failed).
func Presenter(l Ledger, configured string) string {
	if configured != "" {
		return configured
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

// NoVotePresenter is the presenter of a run without a vote round: the
// configured one if it is alive and has an answer, else the first alive
// agent with an answer in configuration order. Once every alive agent has
// answered that is the configured presenter, or the first alive agent; the
// answer matters only when a stall ends the run early (winner_reuse then
// copies the presenter's answer). Without any answer it is Presenter's.
func NoVotePresenter(l Ledger, configured string) string {
	if a := l.Find(configured); a != nil && !a.Failed && a.AnswerCount > 0 {
		return configured
	}
	for _, a := range l.Agents {
		if !a.Failed && a.AnswerCount > 0 {
			return a.ID
		}
	}
	return Presenter(l, configured)
}

// RelaunchFor is Relaunch under the options: without a vote round only the
// alive agents that have no answer yet (and are not running) need a step;
// an answered agent is done. Otherwise it is Relaunch.
func RelaunchFor(l Ledger, o VerdictOptions) []string {
	if !o.SkipVoting {
		return Relaunch(l)
	}
	out := []string{}
	for _, a := range l.Agents {
		if !a.Failed && !a.Running && a.AnswerCount == 0 {
			out = append(out, a.ID)
		}
	}
	return out
}

// AnonymousTally is Tally as models see it on a re-vote: anonymous id →
// fresh votes, only targets with votes.
func AnonymousTally(l Ledger) map[string]int {
	return AnonymousCount(l, Tally(l))
}

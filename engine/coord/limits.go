package coord

import "fmt"

// Limits are the answer limits of seed 001. A nil pointer means unlimited,
// so "no limit" and "a limit of 0" stay distinct after a JSON round trip.
type Limits struct {
	// MaxNewAnswersPerAgent caps each agent's answers; at the cap the agent
	// is vote-only. In decomposition mode it caps the agent's answer streak
	// (see Streak) and reaching it stops the agent (AutoStop).
	MaxNewAnswersPerAgent *int `json:"max_new_answers_per_agent,omitempty"`
	// MaxNewAnswersGlobal caps the answers of all agents together.
	MaxNewAnswersGlobal *int `json:"max_new_answers_global,omitempty"`
	// FairnessLeadCap is the most answers an agent may be ahead of the slowest
	// alive peer (fairness_lead_cap_answers); a first answer is never held back.
	FairnessLeadCap *int `json:"fairness_lead_cap_answers,omitempty"`
	// MaxStepsPerAgent is a hard guard against runaway agents; 0 = unlimited.
	MaxStepsPerAgent int `json:"max_steps_per_agent,omitempty"`
}

// CanAnswer reports whether the agent may submit a new answer now in voting
// mode: CanSubmit with nothing pending. When it may not, reason says why
// without naming any agent, so the round engine can put it in a tool error
// for the model as is. Answers of failed agents still count toward the
// global cap: they were submitted and are stored.
func CanAnswer(l Ledger, agent string, lim Limits) (ok bool, reason string) {
	return CanSubmit(l, Submission{Agent: agent}, lim)
}

// Submission is a new answer about to be accepted, as the submission check
// (CanSubmit) sees it.
type Submission struct {
	Agent string
	// Seen is what the agent has seen when it submits (seen_steps); in
	// decomposition mode it decides whether the answer continues a streak.
	Seen map[string]int
	// Decomposition selects decomposition mode's rules: the per-agent cap
	// is a streak, and the way out of a limit is stop, not vote.
	Decomposition bool
	// Pending counts answers of other agents that were admitted but are not
	// stored yet; they count toward the global cap.
	Pending int
}

// CanSubmit is the submission check of seed 001, asked when a model calls
// new_answer, against the answers stored now: the per-agent cap (in
// decomposition mode the streak cap), the global cap, and the fairness lead
// cap. The reason tells the model what to do instead (vote, or stop in
// decomposition mode) and names no agent.
func CanSubmit(l Ledger, s Submission, lim Limits) (ok bool, reason string) {
	i := l.index(s.Agent)
	if i < 0 {
		return false, fmt.Sprintf("unknown agent %q", s.Agent)
	}
	a := l.Agents[i]
	if a.Failed {
		return false, "agent has failed"
	}
	instead := "vote for the best answer instead"
	if s.Decomposition {
		instead = "call `stop` (summarizing your part) instead"
	}
	if m := lim.MaxNewAnswersPerAgent; m != nil {
		if s.Decomposition {
			if n := Streak(l, a, s.Seen); n > *m {
				return false, fmt.Sprintf("answer limit per agent reached (%d answers in a row without news from peers, limit %d): %s",
					n-1, *m, instead)
			}
		} else if a.AnswerCount >= *m {
			return false, fmt.Sprintf("answer limit per agent reached (%d of %d): %s", a.AnswerCount, *m, instead)
		}
	}
	if m := lim.MaxNewAnswersGlobal; m != nil {
		if total := TotalAnswers(l) + s.Pending; total >= *m {
			return false, fmt.Sprintf("global answer limit reached (%d of %d): %s", total, *m, instead)
		}
	}
	if r := fairnessBlock(l, i, lim.FairnessLeadCap, instead, s.Decomposition); r != "" {
		return false, r
	}
	return true, ""
}

// answerCapped is the answer limit (not fairness) that makes a voting-mode
// agent vote-only, or "".
func answerCapped(l Ledger, a Agent, lim Limits) string {
	if m := lim.MaxNewAnswersPerAgent; m != nil && a.AnswerCount >= *m {
		return "max_new_answers_per_agent"
	}
	if m := lim.MaxNewAnswersGlobal; m != nil && TotalAnswers(l) >= *m {
		return "max_new_answers_global"
	}
	return ""
}

// StepsExhausted reports whether the agent has used up max_steps_per_agent,
// the hard guard that stops an agent that would otherwise never converge.
// The workflow checks it before launching another step.
func StepsExhausted(a Agent, lim Limits) bool {
	return lim.MaxStepsPerAgent > 0 && max(a.LatestStep, a.GivenUpStep) >= lim.MaxStepsPerAgent
}

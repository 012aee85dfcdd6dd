package coord

import "fmt"

// Limits are the answer limits of seed 001. A nil pointer means unlimited,
// so "no limit" and "a limit of 0" stay distinct after a JSON round trip.
type Limits struct {
	// MaxNewAnswersPerAgent caps each agent's answers; at the cap the agent
	// is vote-only.
	MaxNewAnswersPerAgent *int `json:"max_new_answers_per_agent,omitempty"`
	// MaxNewAnswersGlobal caps the answers of all agents together.
	MaxNewAnswersGlobal *int `json:"max_new_answers_global,omitempty"`
	// FairnessLeadCap is the most answers an agent may be ahead of the slowest
	// alive peer (fairness_lead_cap_answers); a first answer is never held back.
	FairnessLeadCap *int `json:"fairness_lead_cap_answers,omitempty"`
	// MaxStepsPerAgent is a hard guard against runaway agents; 0 = unlimited.
	MaxStepsPerAgent int `json:"max_steps_per_agent,omitempty"`
}

// CanAnswer reports whether the agent may submit a new answer now. When it may
// not, reason says why without naming any agent, so the round engine can put
// it in a tool error for the model as is. Answers of failed agents still
// count toward the global cap: they were submitted and are stored.
// Per seed 001, the per-agent and global caps move an agent to vote-only in
// voting mode; decomposition mode's consecutive-streak variant is not modelled
// here.
func CanAnswer(l Ledger, agent string, lim Limits) (ok bool, reason string) {
	i := l.index(agent)
	if i < 0 {
		return false, fmt.Sprintf("unknown agent %q", agent)
	}
	a := l.Agents[i]
	if a.Failed {
		return false, "agent has failed"
	}
	if m := lim.MaxNewAnswersPerAgent; m != nil && a.AnswerCount >= *m {
		return false, fmt.Sprintf("answer limit per agent reached (%d of %d): vote for the best answer instead",
			a.AnswerCount, *m)
	}
	if m := lim.MaxNewAnswersGlobal; m != nil {
		if total := TotalAnswers(l); total >= *m {
			return false, fmt.Sprintf("global answer limit reached (%d of %d): vote for the best answer instead",
				total, *m)
		}
	}
	if r := fairnessBlock(l, i, lim.FairnessLeadCap); r != "" {
		return false, r
	}
	return true, ""
}

// StepsExhausted reports whether the agent has used up max_steps_per_agent,
// the hard guard that stops an agent that would otherwise never converge.
// The workflow checks it before launching another step.
func StepsExhausted(a Agent, lim Limits) bool {
	return lim.MaxStepsPerAgent > 0 && a.LatestStep >= lim.MaxStepsPerAgent
}

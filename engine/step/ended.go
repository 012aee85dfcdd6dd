package step

import (
	"errors"

	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/session"
)

// Ended is how a step that failed ended without an action (session.Ended*),
// the one classification the workflow's activity and step mode record: the
// round timeout ends the agent's turn; an answer refused by peers' limits
// is not held against it; a model that rejects the request, or a reply
// without a valid workflow action after the enforcement attempts, fails the
// agent; anything else (the model unavailable, storage or network trouble)
// is worth another attempt of the same step.
func Ended(err error) string {
	var enf *round.EnforcementError
	var turns *round.TurnLimitError
	var me *llm.Error
	switch {
	case errors.As(err, &enf) && enf.TurnEnded() && enf.AnswerRefused():
		return session.EndedRefused
	case errors.As(err, &enf) && enf.TurnEnded():
		return session.EndedTurn
	case errors.As(err, &enf) || errors.As(err, &turns):
		return session.EndedFailed
	case errors.Is(err, session.ErrSuperseded):
		return session.EndedGivenUp
	case errors.As(err, &me) && !me.Retryable:
		return session.EndedFailed
	}
	return session.EndedRetry
}

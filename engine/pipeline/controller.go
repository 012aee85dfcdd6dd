package pipeline

// OutcomeMaxSteps and OutcomeError are the outcomes of a run stopped by the
// engine rather than by a step: the guard on total steps, and a result Next
// cannot act on. Both come with a Reason.
const (
	OutcomeMaxSteps = "max_steps"
	OutcomeError    = string(Error)
)

// Next is Advance for a driver that cannot handle an error: it always
// returns a state, the step to run next ("" when done) and whether the run
// is done. A result Advance refuses (an unknown status, a destination the
// step may not use) is a bug in the step's runner, not in the model, so it
// ends the run with outcome error and the refusal as Reason rather than
// looping on it. A run already done stays as it is.
func Next(g Graph, s State, r Result) (next State, step string, done bool) {
	if s.Done {
		return s, "", true
	}
	next, err := Advance(g, s, r)
	if err != nil {
		next = s
		next.Done, next.Outcome, next.Reason = true, OutcomeError, err.Error()
	}
	if next.Done {
		return next, "", true
	}
	return next, next.Current, false
}

package pipeline

import "fmt"

// OutcomeMaxSteps and OutcomeError are the outcomes of a run stopped by the
// engine rather than by a step: the guard on total steps, and a result Next
// cannot act on. Both come with a Reason.
const (
	OutcomeMaxSteps = "max_steps"
	OutcomeError    = string(Error)
)

// RequestJump records the model's jump_to_step during step from. The step's
// runner then ends the step, and the next Advance goes to the target for
// good: from never resumes. A refused request returns an error for the
// model and leaves s unchanged.
func (s *State) RequestJump(g Graph, from, to string) error {
	return s.request(g, ToolJump, KindJump, from, to)
}

// RequestCall records the model's call_step during step from. The runner
// ends the step with status call_pending and its messages; the next Advance
// saves them on the stack and restores them when the target completes.
func (s *State) RequestCall(g Graph, from, to string) error {
	return s.request(g, ToolCall, KindCall, from, to)
}

func (s *State) request(g Graph, tool, kind, from, to string) error {
	switch {
	case s.Done:
		return fmt.Errorf("%s: the pipeline run is already done (%s)", tool, s.Outcome)
	case from != s.Current:
		return fmt.Errorf("%s: step %q is not running; the current step is %q", tool, from, s.Current)
	case s.Pending != nil:
		// One transfer per step: a second would silently replace the first,
		// and the model would not know which one happens.
		return fmt.Errorf("%s: this step already asked to %s to %q; finish the step now", tool, s.Pending.Kind, s.Pending.Target)
	}
	if err := checkDestination(g, tool, from, to); err != nil {
		return err
	}
	s.Pending = &Request{Kind: kind, Target: to}
	return nil
}

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
		next.Pending = nil
		next.Done, next.Outcome, next.Reason = true, OutcomeError, err.Error()
	}
	if next.Done {
		return next, "", true
	}
	return next, next.Current, false
}

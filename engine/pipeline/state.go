package pipeline

import (
	"fmt"

	"github.com/conclave-ai/conclave/engine/llm/chat"
)

// Request is a jump or call the model asked for during a step.
type Request struct {
	Kind   string `json:"kind"` // "jump" or "call"
	Target string `json:"target"`
}

// Request kinds.
const (
	KindJump = "jump"
	KindCall = "call"
)

// Result is how a step ended, as the step's runner reports it.
type Result struct {
	Status  Status   `json:"status"`
	Summary string   `json:"summary,omitempty"`
	Request *Request `json:"request,omitempty"`
	// Messages are the step's messages when it yielded to a call; they are
	// restored when the called step returns.
	Messages []chat.Message `json:"messages,omitempty"`
	// MessagesKey is where a driver stored those messages instead, to keep
	// them out of workflow history; it is restored with the caller.
	MessagesKey string `json:"messages_key,omitempty"`
}

// Frame is a caller waiting on the call stack.
type Frame struct {
	Step     string         `json:"step"`
	Messages []chat.Message `json:"messages,omitempty"`
	Key      string         `json:"key,omitempty"` // Result.MessagesKey of the call
}

// State is the whole progress of a pipeline run.
type State struct {
	Current string  `json:"current"`
	Stack   []Frame `json:"stack,omitempty"`
	// Seq counts the steps run so far.
	Seq  int  `json:"seq"`
	Done bool `json:"done"`
	// Outcome says why a finished run stopped: completed, failed (a step
	// failed with on_failure stop), cancelled, max_steps (the guard on
	// total steps, usually a jump loop) or error (Next got a result it
	// cannot act on). Reason says the same in words for max_steps and error.
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Resume holds the messages the current step starts from when it is a
	// caller coming back from a call; nil starts the step fresh.
	Resume []chat.Message `json:"resume,omitempty"`
	// ResumeKey is the returning caller's Frame.Key: the driver loads the
	// messages stored there and appends Resume to them.
	ResumeKey string `json:"resume_key,omitempty"`
}

// Begin starts a run at the graph's start step.
func Begin(g Graph) State { return State{Current: g.Start} }

// ResumeMessages are the messages a caller resumes with when the step it
// called completes: its own messages exactly as saved, then ReturnMessage,
// so the model keeps the full context of its earlier work (seed 002). The
// slice is a copy, so the frame stays unchanged in history.
func ResumeMessages(f Frame, summary string) []chat.Message {
	return append(append(make([]chat.Message, 0, len(f.Messages)+1), f.Messages...), ReturnMessage(summary))
}

// ReturnMessage is what a caller is told when its called step completes.
func ReturnMessage(summary string) chat.Message {
	return chat.Message{Role: chat.RoleUser, Content: "[Called step completed with result: " + summary + "]"}
}

// Advance moves the run past the current step's result: a call pushes the
// caller and runs the target; a jump runs the target and discards the
// caller; a completed called step returns to its caller with the caller's
// messages restored plus ReturnMessage; otherwise the step's Next runs, or
// the run ends. Failures follow the step's on_failure.
func Advance(g Graph, s State, r Result) (State, error) {
	if s.Done {
		return s, fmt.Errorf("the pipeline run is already done (%s)", s.Outcome)
	}
	step, ok := g.Step(s.Current)
	if !ok {
		return s, fmt.Errorf("current step %q is not in the pipeline", s.Current)
	}
	next := State{Current: s.Current, Stack: append([]Frame(nil), s.Stack...), Seq: s.Seq + 1}
	if r.Request != nil && (r.Status == Completed || r.Status == CallPending) {
		if !g.Allowed(step.Name, r.Request.Target) {
			return s, fmt.Errorf("step %q may not %s to %q", step.Name, r.Request.Kind, r.Request.Target)
		}
		switch r.Request.Kind {
		case KindCall:
			next.Stack = append(next.Stack, Frame{Step: step.Name, Messages: r.Messages, Key: r.MessagesKey})
			next.Current = r.Request.Target
		case KindJump:
			next.Current = r.Request.Target
		default:
			return s, fmt.Errorf("unknown request kind %q", r.Request.Kind)
		}
		return guard(g, next), nil
	}
	switch r.Status {
	case Completed:
		next = proceed(step, next, r.Summary)
	case Cancelled:
		next.Done, next.Outcome = true, string(Cancelled)
	case Failed, Error, MaxIterations:
		switch step.OnFailure {
		case "", OnFailureStop:
			next.Done, next.Outcome = true, string(Failed)
		case OnFailureContinue:
			next = proceed(step, next, r.Summary)
		default:
			next.Current = step.OnFailure
		}
	default:
		return s, fmt.Errorf("step %q ended with status %q, which cannot advance the run", step.Name, r.Status)
	}
	return guard(g, next), nil
}

// proceed follows a finished step: back to a waiting caller first, else
// the step's Next, else the end.
func proceed(step Step, next State, summary string) State {
	if n := len(next.Stack); n > 0 {
		caller := next.Stack[n-1]
		next.Stack = next.Stack[:n-1]
		next.Current = caller.Step
		next.Resume = ResumeMessages(caller, summary)
		next.ResumeKey = caller.Key
		return next
	}
	if step.Next == "" {
		next.Done, next.Outcome = true, string(Completed)
		return next
	}
	next.Current = step.Next
	return next
}

// guard ends a run that has used its step budget (a jump loop).
func guard(g Graph, s State) State {
	if !s.Done && s.Seq >= g.maxSteps() {
		s.Done, s.Outcome = true, OutcomeMaxSteps
		s.Reason = fmt.Sprintf("stopped after %d steps, the pipeline's max_steps: steps keep jumping to each other; break the loop or raise max_steps", s.Seq)
	}
	return s
}

package coord

// Event is one input of the state machine.
type Event interface{ event() }

// Tick changes nothing: the machine judges the state and decides what to
// do next (the first event of a session, and of a continued run).
type Tick struct{}

// Launched is a step that started: step mode's rebuild of a step folder
// (the workflow's own launches are recorded when the machine decides them).
type Launched struct {
	Agent string
	Step  int
	Mode  Mode
}

// Acted is a step that ended in a workflow action.
type Acted struct {
	Launch    int
	Action    Action
	Target    string // vote
	Reason    string // vote
	Summary   string // stop
	Status    string // stop
	SeenSteps map[string]int
	Usage     Usage
	Checklist *Checklist
	// Invalid marks a stored vote that could not be read (always stale).
	Invalid bool
}

// Failed is a step that failed for good: the agent is dropped.
type Failed struct {
	Launch int
	Reason string
}

// TurnEnded is a step that ended without an action and gave up its
// number: Overran when the round timeout ended it (counted toward
// MaxEndedTurns), else an answer refused by peers' limits.
type TurnEnded struct {
	Launch  int
	Overran bool
	Reason  string
}

// GivenUp is a step whose folder another launch holds or that was fenced
// off: its number is not reused, and the agent is relaunched.
type GivenUp struct {
	Launch int
	Reason string
}

// FenceDone is the answer to a Fence: Committed when the launch had
// committed to its folder and goes on; Err when the fence could not be
// stored.
type FenceDone struct {
	Launch    int
	Committed bool
	Err       bool
}

// Evaluated is the end of a round evaluation.
type Evaluated struct {
	OK    bool
	Usage Usage
}

// HumanInput is a human input accepted for the inbox.
type HumanInput struct{}

// Timeout is the orchestrator timeout.
type Timeout struct{}

// Cancel is the session's cancellation.
type Cancel struct{}

// Presented is the end of a presentation.
type Presented struct {
	OK     bool
	Usage  Usage
	Reason string // why it failed
}

// Drain asks the machine to launch nothing new (continue-as-new is due,
// or step mode replays stored steps). Undecided also holds a verdict back
// until the machine resumes: step mode replays every stored step before
// judging the whole, as a running step blocks the end.
type Drain struct{ Undecided bool }

// Resume lets a drained machine launch again.
type Resume struct{}

func (Tick) event()       {}
func (Launched) event()   {}
func (Acted) event()      {}
func (Failed) event()     {}
func (TurnEnded) event()  {}
func (GivenUp) event()    {}
func (FenceDone) event()  {}
func (Evaluated) event()  {}
func (HumanInput) event() {}
func (Timeout) event()    {}
func (Cancel) event()     {}
func (Presented) event()  {}
func (Drain) event()      {}
func (Resume) event()     {}

// Decision is one thing the driver must do.
type Decision interface{ decision() }

// Launch starts a step.
type Launch struct {
	Agent  string
	Step   int
	Launch int
	Mode   Mode
	// Tally is the anonymous tally shown on a re-vote.
	Tally map[string]int
	// AutoStop ends the step without a model call in a stop with this
	// summary (decomposition's limits).
	AutoStop string
	// Visible is what the step is shown: agent → step of its latest answer.
	Visible map[string]int
	// Evaluation is the round evaluation the step works from (0: none).
	Evaluation int
}

// Fence fences a running launch off before it is abandoned.
type Fence struct {
	Agent  string
	Step   int
	Launch int
	Reason string
}

// Abandon cancels a launch whose result is no longer wanted.
type Abandon struct{ Launch int }

// Evaluate runs the round evaluator over Visible.
type Evaluate struct {
	Round     int            `json:"round"`
	Visible   map[string]int `json:"visible"`
	Evaluator string         `json:"evaluator"`
	Launch    int            `json:"launch"`
}

// CancelEvaluation cancels the running round evaluator.
type CancelEvaluation struct{}

// WriteInbox stores a human input under Seq.
type WriteInbox struct{ Seq int }

// Present produces the final answer.
type Present struct {
	Presenter string
	Strategy  string
	// NoVote: no vote round was held, so a synthesis is neutral.
	NoVote bool
}

// End ends the session.
type End struct {
	// Phase is the final phase: PhaseDone, PhaseTimeout, PhaseFailed or
	// PhaseCancelled.
	Phase string
	// Cause says why a failed session failed.
	Cause Cause
}

// Cause is why a session ended without an answer.
type Cause string

// Causes of a failed session.
const (
	CauseAllFailed     Cause = "all_agents_failed"
	CauseNoAnswers     Cause = "no_answers"
	CausePresentFailed Cause = "present_failed"
)

func (Launch) decision()           {}
func (Fence) decision()            {}
func (Abandon) decision()          {}
func (Evaluate) decision()         {}
func (CancelEvaluation) decision() {}
func (WriteInbox) decision()       {}
func (Present) decision()          {}
func (End) decision()              {}

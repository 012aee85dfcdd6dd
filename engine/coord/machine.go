package coord

import (
	"fmt"
	"slices"
)

// Rules are the orchestrator settings a session's state machine reads.
// They are fixed when the session starts (config.Orchestrator.Rules, in
// the session's first activity), so replaying a session never re-reads a
// config or re-applies defaults.
type Rules struct {
	Verdict VerdictOptions `json:"verdict"`
	Limits  Limits         `json:"limits"`
	// Rounds launches steps only at a barrier, when no step runs (step
	// mode's rounds, seed 000); otherwise an agent is relaunched as soon as
	// its step ends.
	Rounds bool `json:"rounds,omitempty"`
	// DeferVoting holds a vote-only step back while a peer may still give
	// its first answer (defer_voting_until_all_answered).
	DeferVoting bool `json:"defer_voting,omitempty"`
	// Restart fences and relaunches the running steps of answered agents
	// when a new answer arrives (update_mode: restart, with injection on).
	Restart bool `json:"restart,omitempty"`
	// ManagedEvaluator runs the round evaluator once before round 2+ of
	// checklist-gated voting (orchestrator_managed_round_evaluator).
	ManagedEvaluator bool `json:"managed_evaluator,omitempty"`
	// Strategy is how the final answer is produced after a verdict
	// (winner_present, synthesize or winner_reuse); Fallback, when set, is
	// the strategy used when that presentation fails.
	Strategy string `json:"strategy"`
	Fallback string `json:"fallback,omitempty"`
}

// StrategyWinnerReuse presents the winner's stored answer as is, without
// a model call: the timeout's presentation, and the fallback of a failed one.
const StrategyWinnerReuse = "winner_reuse"

// MaxStepAttempts is how many attempts a step gets when it fails in a way
// worth retrying (a model unavailable, storage trouble): Temporal's retry
// policy for an agent step, and step mode's relaunches of such a step.
// Then the agent is dropped.
const MaxStepAttempts = 10

// MaxEndedTurns is how many steps in a row of an agent may end without an
// action (the round timeout ended them) before the agent is dropped: one
// that never finishes in time would otherwise be relaunched until the
// orchestrator timeout. The workflow and step mode drop it alike.
const MaxEndedTurns = 3

// State is the coordination state of a session: the ledger and everything
// the transitions read besides it. A workflow carries it across
// continue-as-new as one value; step mode rebuilds it from stored files.
type State struct {
	Ledger Ledger `json:"ledger"`
	// AnswerOrder lists agent ids as their answers arrived, newest last
	// (TimeoutWinner's tie-break, which per-agent step numbers cannot give).
	AnswerOrder []string `json:"answer_order"`
	Usage       Usage    `json:"usage"`
	// RevoteRound is how many re-votes were started; Revote lists the
	// agents still owed a step of the current one, shown RevoteTally.
	RevoteRound int            `json:"revote_round"`
	Revote      []string       `json:"revote,omitempty"`
	RevoteTally map[string]int `json:"revote_tally,omitempty"`
	// Launches numbers every launch (steps and evaluations), so a relaunch
	// never resumes an abandoned attempt's checkpoint.
	Launches int `json:"launches"`
	// EndedTurns counts, per agent, its steps in a row that the round
	// timeout ended; an action clears it.
	EndedTurns map[string]int `json:"ended_turns,omitempty"`
	Eval       Evaluation     `json:"eval,omitzero"`
	InboxSeq   int            `json:"inbox_seq"`
	// Running are the launched steps that have not ended, in launch order.
	Running []Run `json:"running,omitempty"`
	// Draining launches nothing new (the workflow is about to continue as
	// new); judging goes on, except for a verdict when Undecided.
	Draining  bool `json:"-"`
	Undecided bool `json:"-"`
	// Stopping is why running steps are being stopped before the end:
	// StopTimeout, StopCancelled or StopDecided.
	Stopping string  `json:"stopping,omitempty"`
	Phase    string  `json:"phase"`
	Verdict  Verdict `json:"verdict,omitzero"`
	// Fallback is why the presentation fell back to the stored answer.
	Fallback  string `json:"fallback,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// Why running steps are stopped.
const (
	StopTimeout   = "timeout"
	StopCancelled = "cancelled"
	StopDecided   = "decided"
)

// Run is one launched step.
type Run struct {
	Agent  string `json:"agent"`
	Step   int    `json:"step"`
	Launch int    `json:"launch"`
	Mode   Mode   `json:"mode"`
	// Answers is how many answers existed at launch: update_mode restart
	// restarts only steps launched before a new answer.
	Answers int `json:"answers"`
	// Fencing: a fence of this launch is under way.
	Fencing bool `json:"fencing,omitempty"`
}

// Evaluation is the managed round evaluator's state.
type Evaluation struct {
	// Round is the latest evaluation run, Visible the answers it read, OK
	// whether it succeeded: gated steps launched on those answers work from it.
	Round   int            `json:"round,omitempty"`
	Visible map[string]int `json:"visible,omitempty"`
	OK      bool           `json:"ok,omitempty"`
	// Running is the evaluation under way, if any.
	Running *Evaluate `json:"running,omitempty"`
}

// Machine is a session's coordination state machine: Step is the one
// entry of every transition. It does no I/O; the workflow and step mode
// drive it.
type Machine struct {
	Rules Rules
	State State
}

// NewMachine is the machine of a new session of the given agents, in
// configuration order.
func NewMachine(r Rules, agents []string) *Machine {
	m := &Machine{Rules: r, State: State{Phase: PhaseCoordinating, AnswerOrder: []string{}}}
	for _, id := range agents {
		m.State.Ledger.Agents = append(m.State.Ledger.Agents, Agent{ID: id})
	}
	return m
}

// Step applies one event and returns what to do next.
func (m *Machine) Step(e Event) []Decision {
	var out []Decision
	switch e := e.(type) {
	case Tick:
	case Drain:
		m.State.Draining, m.State.Undecided = true, e.Undecided
	case Resume:
		m.State.Draining, m.State.Undecided = false, false
	case Launched:
		m.launched(e)
	case Acted:
		out = m.acted(e)
	case Failed:
		if r := m.end(e.Launch); r != nil {
			m.fail(r.Agent, fmt.Sprintf("step %d: %s", r.Step, e.Reason))
		}
	case TurnEnded:
		out = m.turnEnded(e)
	case GivenUp:
		if r := m.end(e.Launch); r != nil {
			m.giveUp(r.Agent, r.Step)
		}
	case FenceDone:
		out = m.fenceDone(e)
	case Evaluated:
		m.evaluated(e)
	case HumanInput:
		m.State.InboxSeq++
		return []Decision{WriteInbox{Seq: m.State.InboxSeq}}
	case Timeout:
		out = m.stop(StopTimeout)
	case Cancel:
		out = m.stop(StopCancelled)
	case Presented:
		return m.presented(e)
	}
	return append(out, m.advance()...)
}

// Running is the run of a launch, or nil.
func (m *Machine) Running(launch int) *Run {
	for i := range m.State.Running {
		if m.State.Running[i].Launch == launch {
			return &m.State.Running[i]
		}
	}
	return nil
}

// Idle reports whether nothing runs: no step and no evaluation.
func (m *Machine) Idle() bool {
	return len(m.State.Running) == 0 && m.State.Eval.Running == nil
}

// Options are the verdict options in force: the rules', with a dropped
// presenter replaced by the first alive agent.
func (m *Machine) Options() VerdictOptions {
	return m.Rules.Verdict.WithoutFailedPresenter(m.State.Ledger)
}

// launched records a step that started (step mode's rebuild); an agent
// owed a re-vote step has it now.
func (m *Machine) launched(e Launched) {
	a := m.State.Ledger.Find(e.Agent)
	if a == nil || a.Running {
		return
	}
	m.start(a, e.Step, e.Mode)
	m.State.Revote = slices.DeleteFunc(m.State.Revote, func(id string) bool { return id == e.Agent })
}

// start marks a's step as running and returns its launch number.
func (m *Machine) start(a *Agent, step int, mode Mode) int {
	a.Running = true
	m.State.Launches++
	m.State.Running = append(m.State.Running, Run{Agent: a.ID, Step: step, Launch: m.State.Launches, Mode: mode,
		Answers: TotalAnswers(m.State.Ledger)})
	return m.State.Launches
}

// end removes a run; nil when the launch is not running (abandoned, or
// ended already), whose events are ignored.
func (m *Machine) end(launch int) *Run {
	i := slices.IndexFunc(m.State.Running, func(r Run) bool { return r.Launch == launch })
	if i < 0 {
		return nil
	}
	r := m.State.Running[i]
	m.State.Running = slices.Delete(m.State.Running, i, i+1)
	if a := m.State.Ledger.Find(r.Agent); a != nil {
		a.Running = false
	}
	return &r
}

// NextStep is the number of the agent's next step: after its latest action
// and after every number given up.
func NextStep(a Agent) int { return max(a.LatestStep, a.GivenUpStep) + 1 }

func (m *Machine) acted(e Acted) []Decision {
	r := m.end(e.Launch)
	if r == nil {
		return nil
	}
	a := m.State.Ledger.Find(r.Agent)
	delete(m.State.EndedTurns, a.ID)
	m.State.Usage = m.State.Usage.Add(e.Usage)
	step := r.Step
	a.LatestStep, a.LastAction = step, e.Action
	a.Vote, a.Stop = nil, nil
	if e.Checklist != nil { // the latest checklist stays until a step makes another
		a.Checklist = e.Checklist
	}
	switch e.Action {
	case ActionNewAnswer:
		RecordAnswer(m.State.Ledger, a, step, e.SeenSteps)
		m.State.AnswerOrder = append(slices.DeleteFunc(m.State.AnswerOrder, func(id string) bool { return id == a.ID }), a.ID)
		return m.restartPeers(a.ID)
	case ActionVote:
		a.Vote = &Vote{Voter: a.ID, Target: e.Target, Reason: e.Reason, SeenSteps: e.SeenSteps, Step: step, Invalid: e.Invalid}
	case ActionStop:
		a.Stop = &Stop{Summary: e.Summary, Status: e.Status, SeenSteps: e.SeenSteps, Step: step}
	}
	return nil
}

// fail drops an agent for good.
func (m *Machine) fail(agent, reason string) {
	a := m.State.Ledger.Find(agent)
	if a == nil {
		return
	}
	a.Failed, a.FailReason = true, reason
	m.State.LastError = agent + " " + reason
}

func (m *Machine) giveUp(agent string, step int) {
	if a := m.State.Ledger.Find(agent); a != nil {
		a.GivenUpStep = max(a.GivenUpStep, step)
	}
}

func (m *Machine) turnEnded(e TurnEnded) []Decision {
	r := m.end(e.Launch)
	if r == nil {
		return nil
	}
	m.giveUp(r.Agent, r.Step)
	if !e.Overran {
		return nil // a refusal by peers' limits says nothing of the agent
	}
	if m.State.EndedTurns == nil {
		m.State.EndedTurns = map[string]int{}
	}
	m.State.EndedTurns[r.Agent]++
	if n := m.State.EndedTurns[r.Agent]; n >= MaxEndedTurns {
		m.fail(r.Agent, fmt.Sprintf("step %d: %d steps in a row ended by the round timeout (last: %s)", r.Step, n, e.Reason))
	}
	return nil
}

// restartPeers is update_mode restart: a new answer fences the running
// steps launched before it, of agents that already have an answer of
// their own (first-answer protection); each fenced off is relaunched with
// the next step number.
func (m *Machine) restartPeers(answerer string) []Decision {
	if !m.Rules.Restart || m.State.Stopping != "" {
		return nil
	}
	total := TotalAnswers(m.State.Ledger)
	var out []Decision
	for i := range m.State.Running {
		r := &m.State.Running[i]
		a := m.State.Ledger.Find(r.Agent)
		if r.Fencing || r.Agent == answerer || r.Answers >= total || a.AnswerCount == 0 {
			continue
		}
		r.Fencing = true
		out = append(out, Fence{Agent: r.Agent, Step: r.Step, Launch: r.Launch, Reason: "restart"})
	}
	return out
}

// fenceDone acts on a fence: a launch fenced off gives up its number and is
// abandoned. One that had committed goes on, and so, for a restart, does
// one whose fence could not be stored (abandoning it unfenced could let it
// write after its relaunch); when steps are being stopped it is abandoned
// anyway.
func (m *Machine) fenceDone(e FenceDone) []Decision {
	r := m.Running(e.Launch)
	if r == nil {
		return nil
	}
	r.Fencing = false
	if e.Committed || (e.Err && m.State.Stopping == "") {
		return nil
	}
	run := m.end(e.Launch)
	m.giveUp(run.Agent, run.Step)
	return []Decision{Abandon{Launch: run.Launch}}
}

func (m *Machine) evaluated(e Evaluated) {
	run := m.State.Eval.Running
	if run == nil {
		return
	}
	m.State.Eval.Running = nil
	m.State.Usage = m.State.Usage.Add(e.Usage)
	// A failed evaluation uses up its round number, so the next one gets
	// a folder of its own; the agents go on without a handoff.
	m.State.Eval.Round, m.State.Eval.Visible, m.State.Eval.OK = run.Round, run.Visible, e.OK
}

// stop begins the end of a session whose running steps must stop first:
// each is fenced; those fenced off are abandoned, those that had committed
// are let finish and their results recorded, so what the session stores
// is what the session decided on.
func (m *Machine) stop(why string) []Decision {
	s := &m.State
	if s.Phase != PhaseCoordinating || s.Stopping != "" {
		// Already ending: only a cancel changes how (a presentation in
		// flight, or a stop under way, ends cancelled).
		if why == StopCancelled && !finalPhase(s.Phase) {
			s.Stopping = why
		}
		return nil
	}
	s.Stopping = why
	var out []Decision
	if s.Eval.Running != nil {
		s.Eval.Running = nil
		out = append(out, CancelEvaluation{})
	}
	for i := range s.Running {
		r := &s.Running[i]
		r.Fencing = true
		out = append(out, Fence{Agent: r.Agent, Step: r.Step, Launch: r.Launch, Reason: why})
	}
	return out
}

func finalPhase(p string) bool {
	switch p {
	case PhaseDone, PhaseFailed, PhaseCancelled, PhaseTimeout:
		return true
	}
	return false
}

// advance decides what follows the state: the end of a stop, a verdict and
// its presentation, a re-vote, or the next launches.
func (m *Machine) advance() []Decision {
	s := &m.State
	if s.Phase != PhaseCoordinating {
		return nil
	}
	if s.Stopping != "" {
		if !m.Idle() {
			return nil
		}
		switch s.Stopping {
		case StopCancelled:
			return m.finish(End{Phase: PhaseCancelled})
		case StopTimeout:
			return m.timedOut()
		}
		return m.decided()
	}
	if len(s.Revote) == 0 {
		v := Judge(s.Ledger, m.Options(), s.RevoteRound)
		if v.Revote {
			m.startRevote()
		} else if v.Done && !s.Undecided {
			s.Verdict = v
			return m.decided()
		}
	}
	if s.Draining {
		return nil
	}
	out := m.launchReady()
	if m.Idle() {
		s.Verdict = Stalled(s.Ledger, m.Options(), s.AnswerOrder)
		return m.decided()
	}
	return out
}

// startRevote asks every alive agent for another vote, showing the tally.
func (m *Machine) startRevote() {
	s := &m.State
	s.RevoteRound++
	s.RevoteTally = AnonymousTally(s.Ledger)
	s.Revote = nil
	for _, a := range s.Ledger.Agents {
		if !a.Failed {
			s.Revote = append(s.Revote, a.ID)
		}
	}
}

// decided ends coordination with the verdict: running steps (normally
// none) are stopped first; a failed verdict ends the session, a decided
// one is presented.
func (m *Machine) decided() []Decision {
	s := &m.State
	if len(s.Running) > 0 || s.Eval.Running != nil {
		return m.stop(StopDecided)
	}
	s.Stopping = ""
	if s.Verdict.Status != StatusFailed && TotalAnswers(s.Ledger) == 0 {
		// Agents that all stopped (or voted) without an answer leave
		// nothing to present: a presenter would have to invent one.
		s.Verdict = Verdict{Done: true, Status: StatusFailed,
			Reason: "coordination ended without any answer to present: every agent stopped without submitting one; check the agents' prompts and the task"}
	}
	if s.Verdict.Status == StatusFailed {
		cause := CauseNoAnswers
		if Alive(s.Ledger) == 0 {
			cause = CauseAllFailed
		}
		return m.finish(End{Phase: PhaseFailed, Cause: cause})
	}
	s.Phase = PhasePresenting
	return []Decision{Present{Presenter: s.Verdict.Winner, Strategy: m.Rules.Strategy, NoVote: m.Rules.Verdict.SkipVoting}}
}

// timedOut presents the timeout winner's stored answer (no model call), so
// nothing already produced is lost to a timeout.
func (m *Machine) timedOut() []Decision {
	s := &m.State
	s.Stopping = ""
	winner, how, err := TimeoutWinner(s.Ledger, s.AnswerOrder)
	if err != nil {
		s.Verdict = Verdict{Done: true, Status: StatusFailed, Reason: err.Error()}
		return m.finish(End{Phase: PhaseFailed, Cause: CauseNoAnswers})
	}
	s.Verdict = Verdict{Done: true, Status: StatusTimeout, Winner: winner, Reason: "orchestrator timeout: " + winner + " wins by " + how}
	s.Phase = PhasePresenting
	return []Decision{Present{Presenter: winner, Strategy: StrategyWinnerReuse, NoVote: m.Rules.Verdict.SkipVoting}}
}

func (m *Machine) presented(e Presented) []Decision {
	s := &m.State
	if s.Phase != PhasePresenting {
		return nil
	}
	s.Usage = s.Usage.Add(e.Usage)
	switch {
	case s.Stopping == StopCancelled:
		return m.finish(End{Phase: PhaseCancelled})
	case e.OK && s.Verdict.Status == StatusTimeout:
		return m.finish(End{Phase: PhaseTimeout})
	case e.OK:
		return m.finish(End{Phase: PhaseDone})
	case s.Verdict.Status != StatusTimeout && s.Fallback == "" && m.Rules.Fallback != "":
		s.Fallback = m.Rules.Strategy + " presentation by " + s.Verdict.Winner + " failed: " + e.Reason
		return []Decision{Present{Presenter: s.Verdict.Winner, Strategy: m.Rules.Fallback, NoVote: m.Rules.Verdict.SkipVoting}}
	}
	return m.finish(End{Phase: PhaseFailed, Cause: CausePresentFailed})
}

func (m *Machine) finish(e End) []Decision {
	m.State.Phase = e.Phase
	if e.Phase == PhaseFailed {
		m.State.Verdict.Status = StatusFailed
	}
	if e.Phase == PhaseCancelled {
		m.State.Verdict.Status = StatusCancelled
	}
	return []Decision{e}
}

// Status is the machine's status: status.json, the workflow's status
// query and step mode's `session status` all show it.
func (m *Machine) Status() Status {
	s := m.State
	st := Summarize(s.Ledger, s.Verdict, s.Phase)
	if s.Phase == PhaseCoordinating {
		st.Relaunch = RelaunchFor(s.Ledger, m.Options())
	}
	st.Usage = s.Usage
	st.PresentationFallback = s.Fallback
	return st
}

// Advise is step mode's status of a replayed, draining machine: what an
// external orchestrator does next. The machine resumes and decides as the
// workflow would now: the agents it launches are Relaunch (a re-vote's
// come with the call: round, tally), a verdict makes the phase done (or
// failed), and nothing to launch while nothing runs is a stall, decided
// as the workflow decides one. The agents' lines are as stored, before any
// launch.
func (m *Machine) Advise() Status {
	st := m.Status()
	st.Relaunch = []string{}
	for _, d := range m.Step(Resume{}) {
		l, ok := d.(Launch)
		if !ok {
			continue
		}
		st.Relaunch = append(st.Relaunch, l.Agent)
		if l.Tally != nil && st.Revote == nil {
			st.Revote = &RevoteCall{Round: m.State.RevoteRound, Of: m.Rules.Verdict.MaxRevoteRounds, Tally: m.realTally(l.Tally)}
		}
	}
	if st.Revote != nil {
		st.Revote.Agents = st.Relaunch
	}
	s := m.State
	if s.Phase == PhaseCoordinating {
		return st
	}
	st.Phase = PhaseFailed
	if s.Verdict.Decided() {
		st.Phase = PhaseDone
		st.DecidedBy = s.Verdict.Status
	}
	st.Winner, st.Consensus = s.Verdict.Winner, s.Verdict.Status == StatusConsensus
	st.Relaunch, st.Revote = []string{}, nil
	return st
}

// realTally is an anonymous tally keyed by real ids again.
func (m *Machine) realTally(anon map[string]int) map[string]int {
	ids := make([]string, len(m.State.Ledger.Agents))
	for i, a := range m.State.Ledger.Agents {
		ids[i] = a.ID
	}
	anonOf := AnonymousIDs(ids)
	out := map[string]int{}
	for _, a := range m.State.Ledger.Agents { // ledger order, never map order
		if n := anon[anonOf[a.ID]]; n > 0 {
			out[a.ID] = n
		}
	}
	return out
}

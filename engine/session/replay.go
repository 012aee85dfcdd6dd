package session

import (
	"sort"
	"time"

	"github.com/conclave-ai/conclave/engine/coord"
)

// StepRecord is what one step folder of an agent says happened: an action,
// a step still in progress, or how a step without an action ended. The
// coordination state machine replays records as the events the workflow
// fed it when those steps ended (Replay).
type StepRecord struct {
	Step int
	// At is when the step ended: its action's or its fence's timestamp.
	At      time.Time
	Action  coord.Action
	Target  string // vote
	Reason  string // vote reason, or why the step ended without an action
	Summary string // stop
	Status  string // stop
	Seen    map[string]int
	// Invalid marks a vote file that could not be read: it counts as stale.
	Invalid bool
	// Running is a step in progress.
	Running bool
	// Ended is how a step without an action ended (Ended* below), and
	// Attempts how many attempts of it failed (EndedRetry).
	Ended    string
	Attempts int
}

// How a step ended without an action, as its fenced launch.json records
// it ("ended"): the event the state machine replays.
const (
	// EndedGivenUp: fenced by the workflow (restart, timeout, cancel) or
	// held by another launch; its number is not used again.
	EndedGivenUp = "given_up"
	// EndedTurn: its turn ended (the round timeout; in step mode, any
	// step that failed): coord.MaxEndedTurns in a row drop the agent.
	EndedTurn = "turn"
	// EndedRefused: its answer was refused by peers' limits; not counted.
	EndedRefused = "refused"
	// EndedFailed: it failed for good and the agent is dropped.
	EndedFailed = "failed"
	// EndedRetry: it failed in a way worth another attempt (the model
	// unavailable, storage trouble), as Temporal retries an activity:
	// the agent's next step resumes the same folder, and after
	// coord.MaxStepAttempts attempts the agent is dropped. Step mode only.
	EndedRetry = "retry"
)

// parseTime reads a stored timestamp; an unreadable one is the zero time.
func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// Replay rebuilds the session's coordination state machine from its step
// folders: every agent's records, in the order they happened across
// agents (by timestamp, else round by round; an agent's own records stay
// in step order), are
// fed to the machine as the events the workflow fed it. The machine is
// draining: it launches and decides nothing until the caller resumes it
// (coord.Resume); re-votes are counted as they happened. Steps in progress are left out unless withRunning.
func (s *Snapshot) Replay(r coord.Rules, withRunning bool) *coord.Machine {
	r.Restart = false // nothing is running to be fenced
	ids := make([]string, len(s.Agents))
	type item struct {
		agent int
		rec   StepRecord
	}
	var items []item
	for i, a := range s.Agents {
		ids[i] = a.ID
		var at time.Time
		for _, rec := range a.Steps {
			if rec.Running {
				rec.At = time.Unix(1<<62, 0) // after everything that ended
			}
			if rec.At.Before(at) {
				rec.At = at // an agent's steps happened in their order
			}
			at = rec.At
			items = append(items, item{i, rec})
		}
	}
	// Records that tie (files without timestamps) go round by round: every
	// agent's step n before any step n+1.
	sort.SliceStable(items, func(i, j int) bool {
		x, y := items[i], items[j]
		if !x.rec.At.Equal(y.rec.At) {
			return x.rec.At.Before(y.rec.At)
		}
		if x.rec.Step != y.rec.Step {
			return x.rec.Step < y.rec.Step
		}
		return x.agent < y.agent
	})
	m := coord.NewMachine(r, ids)
	m.Step(coord.Drain{Undecided: true})
	for _, it := range items {
		rec := it.rec
		if rec.Running && !withRunning {
			continue
		}
		if rec.Ended == EndedRetry && rec.Attempts < coord.MaxStepAttempts {
			continue // its next attempt is still to come, in the same folder
		}
		m.Step(coord.Launched{Agent: ids[it.agent], Step: rec.Step})
		launch := m.State.Launches
		switch {
		case rec.Running:
		case rec.Action != coord.ActionNone:
			m.Step(coord.Acted{Launch: launch, Action: rec.Action, Target: rec.Target, Reason: rec.Reason,
				Summary: rec.Summary, Status: rec.Status, SeenSteps: rec.Seen, Invalid: rec.Invalid})
		case rec.Ended == EndedFailed || rec.Ended == EndedRetry:
			m.Step(coord.Failed{Launch: launch, Reason: rec.Reason})
		case rec.Ended == EndedTurn || rec.Ended == EndedRefused:
			m.Step(coord.TurnEnded{Launch: launch, Overran: rec.Ended == EndedTurn, Reason: rec.Reason})
		default:
			m.Step(coord.GivenUp{Launch: launch, Reason: rec.Reason})
		}
	}
	return m
}

// settle sets every agent's coordination state from the replayed steps,
// after the agents were loaded or the team changed.
func (s *Snapshot) settle() {
	m := s.Replay(coord.Rules{}, true)
	for i := range s.Agents {
		a := &s.Agents[i]
		a.Agent = *m.State.Ledger.Find(a.ID)
		a.RunningStep = 0
		if n := len(a.Steps); n > 0 && a.Steps[n-1].Running {
			a.RunningStep = a.Steps[n-1].Step
		}
	}
}

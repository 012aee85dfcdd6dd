package step

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

// answerGate is the round engine's submission check (round.Gate) over
// storage, the same for step mode and Temporal: when the model calls
// new_answer it reloads the session and applies coord.CanSubmit to the
// answers stored now. Under max_new_answers_global an admitted answer
// also takes an answer slot, created exclusively, so of two steps
// submitting at the same instant only as many as the cap allows are
// admitted; a retry of the same step finds its own slot.
type answerGate struct {
	store         storage.Store
	team          []string
	agent         string
	step          int
	tag           string
	lim           coord.Limits
	decomposition bool
}

// maxSlotRaces bounds how often a submission retries after losing the
// race for a slot number to another step; each loss means another answer
// was admitted, so the cap is reached long before this.
const maxSlotRaces = 100

// AdmitAnswer implements round.Gate.
func (g *answerGate) AdmitAnswer(ctx context.Context, seen map[string]int) (string, error) {
	for range maxSlotRaces {
		var slots []session.AnswerSlot
		next := 1
		var err error
		if g.lim.MaxNewAnswersGlobal != nil {
			// Listed before the answers are loaded: a slot whose answer
			// is stored in between is then counted once, as an answer.
			if slots, next, err = listSlots(ctx, g.store); err != nil {
				return "", err
			}
		}
		snap, err := session.Load(ctx, g.store)
		if err != nil {
			return "", err
		}
		snap.KeepTeam() // folders of agents outside the team are not counted
		if err := snap.Include(g.team); err != nil {
			return "", err
		}
		pending, own, err := g.pending(ctx, snap, slots)
		if err != nil {
			return "", err
		}
		if own {
			return "", nil // admitted before: a retry of this step
		}
		ok, reason := coord.CanSubmit(snap.Ledger(), coord.Submission{
			Agent: g.agent, Seen: seen, Decomposition: g.decomposition, Pending: pending}, g.lim)
		if !ok {
			return reason, nil
		}
		if g.lim.MaxNewAnswersGlobal == nil {
			return "", nil
		}
		data, err := json.Marshal(session.AnswerSlot{Agent: g.agent, Step: g.step, Launch: g.tag})
		if err != nil {
			return "", err
		}
		err = g.store.Create(ctx, session.AnswerSlotKey(next), data)
		if !errors.Is(err, storage.ErrExists) {
			return "", err
		}
		// Another step took that slot first: look again.
	}
	return "", fmt.Errorf("could not take an answer slot after %d tries: too many concurrent submissions", maxSlotRaces)
}

// pending counts the slots of other steps that may still store their
// answer: the holder's answer is not in snap yet, the holder has no action
// at or after that step, and its launch marker does not say it is fenced.
// own reports a slot of this very step.
func (g *answerGate) pending(ctx context.Context, snap *session.Snapshot, slots []session.AnswerSlot) (n int, own bool, err error) {
	for _, s := range slots {
		if s.Agent == g.agent && s.Step == g.step {
			own = true
			continue
		}
		holder, ok := snap.Agent(s.Agent)
		if ok && holder.LatestStep >= s.Step {
			continue // its answer is stored (and counted), or it ended without one
		}
		fenced, err := fencedStep(ctx, g.store, s.Agent, s.Step)
		if err != nil {
			return 0, false, err
		}
		if !fenced {
			n++
		}
	}
	return n, own, nil
}

// listSlots reads every answer slot and returns the next slot number.
// A slot that cannot be read still counts (as held by no known step), so
// damage never lets more answers in.
func listSlots(ctx context.Context, st storage.Store) ([]session.AnswerSlot, int, error) {
	keys, err := st.List(ctx, session.AnswerSlotsPrefix)
	if err != nil {
		return nil, 0, fmt.Errorf("list the answer slots: %w", err)
	}
	var slots []session.AnswerSlot
	next := 1
	for _, k := range keys {
		n, ok := session.ParseAnswerSlotKey(k)
		if !ok {
			continue
		}
		next = max(next, n+1)
		data, err := st.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read %s: %w", k, err)
		}
		var s session.AnswerSlot
		_ = json.Unmarshal(data, &s) // damaged: held by no known step
		slots = append(slots, s)
	}
	return slots, next, nil
}

// launchMarker is agents/<id>/<NNN>/launch.json, which a Temporal step
// attempt's launch writes: {"launch": L}, or {"fenced": true} once the
// step may no longer write (superseded, timed out, the session ended).
type launchMarker struct {
	Launch int  `json:"launch,omitempty"`
	Fenced bool `json:"fenced,omitempty"`
}

func launchMarkerKey(agent string, step int) string {
	return session.StepPrefix(agent, step) + "launch.json"
}

// fencedStep reports whether the step's launch marker says it is fenced;
// no marker (step mode, or an older worker) means it is not.
func fencedStep(ctx context.Context, st storage.Store, agent string, step int) (bool, error) {
	data, err := st.Get(ctx, launchMarkerKey(agent, step))
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", launchMarkerKey(agent, step), err)
	}
	var m launchMarker
	if json.Unmarshal(data, &m) != nil {
		return false, nil // a damaged marker fences nothing
	}
	return m.Fenced, nil
}

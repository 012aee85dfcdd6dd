package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/runes"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/step"
	"github.com/conclave-ai/conclave/engine/storage"
)

// stepTeam makes sure the session knows its team before a step runs, so
// anonymous labels (agent1..agentN, agents sorted by id) come from the
// team and not from which agents happen to have files yet. The team is
// session.json's agents; the first step of a session records it from
// --agents (created exclusively, so parallel first steps agree on one
// file). A session without session.json and without --agents is refused,
// and so is an --agents that disagrees with session.json, an agent
// outside its team, or a config whose coordination_mode differs from the
// session's mode. Errors wrap step.ErrBadInput (exit 1).
func stepTeam(ctx context.Context, st storage.Store, flagAgents []string, self, task string, orch config.Orchestrator, now time.Time) (*session.Info, error) {
	want := slices.Sorted(slices.Values(flagAgents))
	want = slices.Compact(want)
	if err := config.CheckTeam(want); err != nil {
		return nil, fmt.Errorf("%w: --agents: %v", step.ErrBadInput, err)
	}
	info, err := readInfo(ctx, st)
	if err != nil {
		return nil, err
	}
	if info == nil {
		if len(want) == 0 {
			return nil, fmt.Errorf("%w: the session at %s has no session.json, so its team is unknown: pass --agents with every agent id of the team "+
				"(for example --agents agent_a,agent_b,agent_c) on its steps; the first step records it in session.json", step.ErrBadInput, st.Location())
		}
		if !slices.Contains(want, self) {
			return nil, fmt.Errorf("%w: --agents %s does not include this config's agent %s: list the whole team", step.ErrBadInput, strings.Join(want, ","), self)
		}
		created := session.Info{Task: task, Agents: want, Mode: string(orch.CoordinationMode), CreatedAt: now.UTC().Truncate(time.Second)}
		data, err := json.MarshalIndent(created, "", "  ")
		if err != nil {
			return nil, err
		}
		switch err := st.Create(ctx, session.InfoKey, append(data, '\n')); {
		case err == nil:
			return &created, nil
		case !errors.Is(err, storage.ErrExists):
			return nil, fmt.Errorf("%w: record the team in %s: %v", step.ErrBadInput, session.InfoKey, err)
		}
		// A parallel first step recorded it: check against that one.
		if info, err = readInfo(ctx, st); err != nil {
			return nil, err
		}
	}
	team := slices.Compact(slices.Sorted(slices.Values(info.Agents)))
	if len(team) == 0 {
		return nil, fmt.Errorf("%w: %s in %s lists no agents, so the team is unknown: add them to its \"agents\"", step.ErrBadInput, session.InfoKey, st.Location())
	}
	if len(want) > 0 && !slices.Equal(want, team) {
		return nil, fmt.Errorf("%w: --agents %s is not the session's team %s (%s): pass the same team, or drop --agents",
			step.ErrBadInput, strings.Join(want, ","), strings.Join(team, ","), session.InfoKey)
	}
	if !slices.Contains(team, self) {
		return nil, fmt.Errorf("%w: agent %s is not in the session's team %s (%s): use a config of one of them",
			step.ErrBadInput, self, strings.Join(team, ","), session.InfoKey)
	}
	if info.Mode != "" && info.Mode != string(orch.CoordinationMode) {
		return nil, fmt.Errorf("%w: the config's coordination_mode is %q but the session's mode is %q (%s): use the session's mode",
			step.ErrBadInput, orch.CoordinationMode, info.Mode, session.InfoKey)
	}
	return info, nil
}

// readInfo reads session.json; nil when there is none.
func readInfo(ctx context.Context, st storage.Store) (*session.Info, error) {
	var info session.Info
	err := session.ReadJSON(ctx, st, session.InfoKey, &info)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%w: read %s in %s: %v", step.ErrBadInput, session.InfoKey, st.Location(), err)
	}
	return &info, nil
}

// stepPlan is what the session says about the agent's next step.
type stepPlan struct {
	step  int // the step number the step will get
	mode  coord.Mode
	tally map[string]int // anonymous tally shown on a re-vote
}

// planStep replays the session through the state machine the way
// `session status` does, under the agent config's orchestrator settings:
// an agent owed a re-vote steps vote-only and is shown the tally the round
// began with; an agent that already cast its re-vote of the round under
// way is refused, since another vote would start the next round early.
// Peers' steps in progress (launched in the same round, racing this one)
// are left out: what a step is asked to do follows from the actions
// stored so far.
func planStep(ctx context.Context, st storage.Store, self string, orch config.Orchestrator, info *session.Info) (stepPlan, error) {
	snap, err := session.Load(ctx, st)
	if err != nil {
		return stepPlan{}, fmt.Errorf("%w: %v", step.ErrBadInput, err)
	}
	snap.KeepTeam()
	if err := snap.Include([]string{self}); err != nil {
		return stepPlan{}, fmt.Errorf("%w: %v", step.ErrBadInput, err)
	}
	rules := modeRules(orch, info)
	m := snap.Replay(rules, false)
	a := *m.State.Ledger.Find(self)
	p := stepPlan{step: coord.NextStep(a)}
	if coord.StepsExhausted(a, rules.Limits) {
		return p, fmt.Errorf("%w: agent %s has used up max_steps_per_agent (%d); it takes no more steps (see `conclave session status`)",
			step.ErrBadInput, self, rules.Limits.MaxStepsPerAgent)
	}
	owed := slices.Clone(m.State.Revote)
	round := m.State.RevoteRound
	for _, d := range m.Step(coord.Resume{}) {
		if l, ok := d.(coord.Launch); ok && l.Agent == self && l.Tally != nil {
			p.mode, p.tally = coord.ModeVoteOnly, l.Tally
		}
	}
	if m.State.Phase != coord.PhaseCoordinating {
		return p, fmt.Errorf("%w: the session is over (%s): no agent takes another step; see `conclave session status`",
			step.ErrBadInput, m.State.Verdict.Reason)
	}
	if len(owed) > 0 && !slices.Contains(owed, self) {
		return p, fmt.Errorf("%w: agent %s has cast its vote of re-vote %d of %d; the round waits for %s (see `conclave session status`)",
			step.ErrBadInput, self, round, orch.MaxRevoteRounds, strings.Join(owed, ", "))
	}
	return p, nil
}

// endAttempt marks a step that ended without an action as over, in its
// launch.json: "fenced", and how it ended (step.Ended), as the workflow's
// activity records it, so replaying the session drops the agent exactly
// when the workflow would. A turn that ended (the round timeout) gives up
// its number, and coord.MaxEndedTurns such turns in a row drop the agent;
// a model that rejects the request, or no valid action after the
// enforcement attempts, drops it at once; an answer refused by peers'
// limits is not held against it; anything else is tried again in the same
// folder, resuming its checkpoint, up to coord.MaxStepAttempts attempts.
func endAttempt(ctx context.Context, st storage.Store, agent string, n int, cause error) error {
	ctx = context.WithoutCancel(ctx) // an interrupted step still says it is over
	reason := runes.Clip(cause.Error(), 300)
	return session.EndStep(ctx, st, agent, n, reason, step.Ended(cause), time.Now())
}

package coord

import (
	"maps"
	"slices"
)

// sim drives a ledger the way the workflow does: each action is one step of
// one agent, so test ledgers are always internally consistent.
type sim struct {
	l Ledger
}

func newSim(ids ...string) *sim {
	s := &sim{}
	for _, id := range ids {
		s.l.Agents = append(s.l.Agents, Agent{ID: id})
	}
	return s
}

func (s *sim) agent(id string) *Agent {
	i := s.l.index(id)
	if i < 0 {
		panic("unknown agent " + id)
	}
	return &s.l.Agents[i]
}

// step starts a new step of id ending in action and returns the agent.
func (s *sim) step(id string, action Action) *Agent {
	a := s.agent(id)
	a.LatestStep++
	a.LastAction = action
	a.Running = false
	a.Vote, a.Stop = nil, nil
	return a
}

func (s *sim) answer(id string) *sim {
	a := s.step(id, ActionNewAnswer)
	a.LatestAnswerStep = a.LatestStep
	a.AnswerCount++
	return s
}

// vote casts a vote having seen everything recorded so far.
func (s *sim) vote(id, target string) *sim {
	return s.voteSeen(id, target, SeenSteps(s.l))
}

func (s *sim) voteSeen(id, target string, seen map[string]int) *sim {
	a := s.step(id, ActionVote)
	a.Vote = &Vote{Voter: id, Target: target, SeenSteps: maps.Clone(seen), Step: a.LatestStep}
	return s
}

func (s *sim) invalidVote(id string) *sim {
	a := s.step(id, ActionVote)
	a.Vote = &Vote{Voter: id, Invalid: true, Step: a.LatestStep}
	return s
}

// missingVote records a vote step whose vote.json could not be loaded.
func (s *sim) missingVote(id string) *sim {
	s.step(id, ActionVote)
	return s
}

func (s *sim) stopSeen(id string, seen map[string]int) *sim {
	a := s.step(id, ActionStop)
	a.Stop = &Stop{Summary: "done", Status: "complete", SeenSteps: maps.Clone(seen), Step: a.LatestStep}
	return s
}

func (s *sim) stop(id string) *sim { return s.stopSeen(id, SeenSteps(s.l)) }

func (s *sim) fail(id string) *sim {
	s.agent(id).Failed = true
	return s
}

func (s *sim) run(id string) *sim {
	s.agent(id).Running = true
	return s
}

// ledger returns a deep copy, so later actions do not change it.
func (s *sim) ledger() Ledger { return cloneLedger(s.l) }

func cloneLedger(l Ledger) Ledger {
	out := Ledger{Agents: slices.Clone(l.Agents)}
	for i := range out.Agents {
		a := &out.Agents[i]
		if a.Vote != nil {
			v := *a.Vote
			v.SeenSteps = maps.Clone(v.SeenSteps)
			a.Vote = &v
		}
		if a.Stop != nil {
			st := *a.Stop
			st.SeenSteps = maps.Clone(st.SeenSteps)
			a.Stop = &st
		}
	}
	return out
}

func intp(n int) *int { return &n }

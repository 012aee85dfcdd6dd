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

// answer submits an answer having seen everything recorded so far.
func (s *sim) answer(id string) *sim {
	a := s.agent(id)
	a.Running = false
	RecordAnswer(s.l, a, a.LatestStep+1, seenNow(s.l))
	return s
}

// vote casts a vote having seen everything recorded so far.
func (s *sim) vote(id, target string) *sim {
	return s.voteSeen(id, target, seenNow(s.l))
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

func (s *sim) stop(id string) *sim { return s.stopSeen(id, seenNow(s.l)) }

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

// seenNow is what an agent deciding now has seen (the seen_steps of
// vote.json and stop.json): every agent with an answer mapped to the step
// of its latest answer.
func seenNow(l Ledger) map[string]int {
	seen := make(map[string]int)
	for _, a := range l.Agents {
		if a.LatestAnswerStep > 0 {
			seen[a.ID] = a.LatestAnswerStep
		}
	}
	return seen
}

func intp(n int) *int { return &n }

// fuzzIDs are deliberately not in sorted order, so configuration order and
// anonymous order differ.
var fuzzIDs = []string{"agent_c", "agent_a", "agent_e", "agent_b", "agent_d"}

// fuzzSim builds a consistent ledger from fuzz bytes: data[0] picks the number
// of agents, then every (op, arg) pair is one event of one agent.
func fuzzSim(data []byte) (*sim, []map[string]int) {
	n := 1
	if len(data) > 0 {
		n += int(data[0]) % len(fuzzIDs)
		data = data[1:]
	}
	s := newSim(fuzzIDs[:n]...)
	history := []map[string]int{seenNow(s.l)}
	return s, play(s, data, history)
}

// play applies events to s. history holds SeenSteps after every event, so a
// vote can be cast on an older view, like a voter that decided before peers'
// answers arrived.
func play(s *sim, events []byte, history []map[string]int) []map[string]int {
	n := len(s.l.Agents)
	for i := 0; i+1 < len(events); i += 2 {
		op, arg := events[i], int(events[i+1])
		id := s.l.Agents[arg%n].ID
		other := s.l.Agents[(arg/n)%n].ID
		if s.agent(id).Failed {
			continue
		}
		switch op % 10 {
		case 0, 1, 2:
			s.answer(id)
		case 3, 4:
			s.vote(id, other)
		case 5:
			seen := history[len(history)-1-(arg/(n*n))%len(history)]
			s.voteSeen(id, other, seen)
		case 6:
			s.stop(id)
		case 7:
			if op/10%2 == 0 {
				s.invalidVote(id)
			} else {
				s.missingVote(id)
			}
		case 8:
			s.run(id)
		case 9:
			if op/10%3 == 0 {
				s.fail(id)
			} else {
				s.voteSeen(id, other, nil)
			}
		}
		history = append(history, seenNow(s.l))
	}
	return history
}

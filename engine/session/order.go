package session

import (
	"sort"
	"time"
)

// AnswerOrder lists the agents with answers by the time of their latest
// answer, newest last, as coord.TimeoutWinner and coord.Stalled take it.
// Step numbers are per agent and cannot be compared across agents, so the
// answer.json timestamps order them; equal timestamps keep snapshot order.
func (s *Snapshot) AnswerOrder() []string {
	type latest struct{ id, at string }
	var answered []latest
	for i := range s.Agents {
		if a := s.Agents[i].Latest(); a != nil {
			answered = append(answered, latest{s.Agents[i].ID, a.Timestamp})
		}
	}
	// Parsed, not compared as strings: files written before timestamps had
	// microseconds ("…:03Z") sort after those written since ("…:03.500000Z")
	// as strings. An unreadable one counts as the oldest.
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339Nano, s); return t }
	sort.SliceStable(answered, func(i, j int) bool { return at(answered[i].at).Before(at(answered[j].at)) })
	out := make([]string, len(answered))
	for i, a := range answered {
		out[i] = a.id
	}
	return out
}

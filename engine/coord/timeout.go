package coord

import "errors"

// How TimeoutWinner chose its winner.
const (
	TimeoutByVotes        = "votes"
	TimeoutByNewestAnswer = "newest_answer"
)

// ErrNoAnswers is returned by TimeoutWinner when there is nothing to present.
var ErrNoAnswers = errors.New("coordination timed out before any agent submitted an answer: " +
	"raise orchestrator_timeout_seconds or check why the agents' steps failed")

// TimeoutWinner picks the answer to keep when orchestrator_timeout_seconds
// runs out, so nothing already produced is lost to a timeout.
//
// First choice is the most fresh-voted alive agent that has an answer, ties
// going to configuration order. Without such votes, the newest answer wins.
// Step numbers are per agent and cannot be compared across agents, so the
// arrival order is passed in: answerOrder lists agent ids as their answers
// arrived, newest last. An append-only log of arrivals works as is (an id's
// last occurrence counts), and a session loader can build it by sorting
// answer.json timestamps. Agents with answers missing from answerOrder rank
// older than every listed one, ties among them going to configuration order,
// so a nil answerOrder still yields a deterministic winner. Alive agents are
// preferred; a failed agent's stored answer is used only when no alive agent
// has one. Without any answer, the error is ErrNoAnswers.
func TimeoutWinner(l Ledger, answerOrder []string) (winner, how string, err error) {
	votes := Tally(l)
	top := 0
	for _, a := range l.Agents {
		if !a.Failed && a.LatestAnswerStep > 0 && votes[a.ID] > top {
			winner, top = a.ID, votes[a.ID]
		}
	}
	if winner != "" {
		return winner, TimeoutByVotes, nil
	}
	rank := make(map[string]int, len(answerOrder))
	for i, id := range answerOrder {
		rank[id] = i + 1
	}
	for _, failed := range []bool{false, true} {
		best := -1
		for _, a := range l.Agents {
			if a.Failed == failed && a.LatestAnswerStep > 0 && rank[a.ID] > best {
				winner, best = a.ID, rank[a.ID]
			}
		}
		if winner != "" {
			return winner, TimeoutByNewestAnswer, nil
		}
	}
	return "", "", ErrNoAnswers
}

package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/storage"
)

// Answer is one stored answer revision of an agent.
type Answer struct {
	Agent    string `json:"agent"`
	Step     int    `json:"step"`
	Revision int    `json:"revision"` // 1-based: the M of label agentN.M
	Text     string `json:"text"`
	// SeenSteps is what the agent had seen when it submitted the answer
	// (nil for answers stored without it).
	SeenSteps map[string]int `json:"seen_steps,omitempty"`
	// Workspace is the storage key prefix of the delivered workspace, empty
	// when the answer came without files.
	Workspace string `json:"workspace,omitempty"`
	Timestamp string `json:"timestamp"`
}

// Agent is everything a snapshot knows about one agent. Its coordination
// state (the embedded coord.Agent) is what the state machine makes of its
// steps (Replay), as the workflow's does of the same events.
type Agent struct {
	coord.Agent
	Answers []Answer `json:"answers"` // in step order
	// Steps are the agent's step folders in step order, as the state
	// machine replays them.
	Steps []StepRecord `json:"-"`
	// RunningStep is the step in progress when Running is set.
	RunningStep int `json:"running_step,omitempty"`
}

// Latest returns the agent's newest answer, or nil when it has none.
func (a *Agent) Latest() *Answer {
	if len(a.Answers) == 0 {
		return nil
	}
	return &a.Answers[len(a.Answers)-1]
}

// Problem is a file that could not be used. Loading never fails because of a
// single bad file: the problem is reported and the rest of the session stays
// usable, so one corrupt vote cannot block an orchestrator.
type Problem struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

func (p Problem) String() string { return p.Key + ": " + p.Reason }

// Snapshot is the state of a session as stored.
type Snapshot struct {
	Info     *Info     `json:"info,omitempty"`
	Agents   []Agent   `json:"agents"` // session.json order, else sorted by id
	Problems []Problem `json:"problems,omitempty"`
	// WorkspaceFiles counts the files of every stored workspace, for the
	// session's workspace limit.
	WorkspaceFiles int `json:"-"`
}

// Agent returns the snapshot of one agent.
func (s *Snapshot) Agent(id string) (*Agent, bool) {
	for i := range s.Agents {
		if s.Agents[i].ID == id {
			return &s.Agents[i], true
		}
	}
	return nil, false
}

// Ledger is the coordination view of the snapshot, for engine/coord.
func (s *Snapshot) Ledger() coord.Ledger {
	l := coord.Ledger{Agents: make([]coord.Agent, len(s.Agents))}
	for i, a := range s.Agents {
		l.Agents[i] = a.Agent
	}
	return l
}

// Load reads a session. It fails only when the store itself cannot be read;
// unreadable files become Problems.
func Load(ctx context.Context, st storage.Store) (*Snapshot, error) {
	snap := &Snapshot{}
	// session.json and the listing are independent reads: one round trip.
	infoErr := make(chan error, 1)
	go func() { infoErr <- ReadJSON(ctx, st, InfoKey, &snap.Info) }()
	keys, err := st.List(ctx, AgentsPrefix)
	if err := <-infoErr; err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			snap.problem(InfoKey, err)
		}
		snap.Info = nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the session's agents in %s: %w", st.Location(), err)
	}
	steps := map[string]map[int]map[string]bool{} // agent → step → file names
	for _, key := range keys {
		if strings.Contains(key, "/"+workspaceDir+"/") {
			snap.WorkspaceFiles++
		}
		parts := strings.SplitN(strings.TrimPrefix(key, AgentsPrefix), "/", 3)
		if len(parts) < 2 {
			continue
		}
		agent := parts[0]
		if CheckAgentID(agent) != nil {
			snap.Problems = append(snap.Problems, Problem{key, "not under a valid agent id; ignored"})
			continue
		}
		if steps[agent] == nil {
			steps[agent] = map[int]map[string]bool{}
		}
		if len(parts) == 2 {
			continue // last_action.json and other per-agent files
		}
		step, ok := parseStepName(parts[1])
		if !ok {
			snap.Problems = append(snap.Problems, Problem{key, "not inside a numbered step folder; ignored"})
			continue
		}
		if steps[agent][step] == nil {
			steps[agent][step] = map[string]bool{}
		}
		steps[agent][step][parts[2]] = true
	}

	// Agents load concurrently (each reads its own files in order); their
	// problems are gathered in agent order, so the result does not depend
	// on timing.
	ids := agentOrder(snap.Info, steps)
	subs := make([]Snapshot, len(ids))
	agents := make([]Agent, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			agents[i], errs[i] = subs[i].loadAgent(ctx, st, id, steps[id])
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil {
			return nil, errs[i]
		}
		snap.Problems = append(snap.Problems, subs[i].Problems...)
		snap.Agents = append(snap.Agents, agents[i])
	}
	snap.settle()
	return snap, nil
}

// agentOrder is session.json's agent list when present (agents without files
// yet are no_action), plus any agent found on disk, else all found, sorted.
func agentOrder(info *Info, steps map[string]map[int]map[string]bool) []string {
	var ids []string
	seen := map[string]bool{}
	if info != nil {
		for _, id := range info.Agents {
			if CheckAgentID(id) == nil && !seen[id] {
				ids = append(ids, id)
				seen[id] = true
			}
		}
	}
	var extra []string
	for id := range steps {
		if !seen[id] {
			extra = append(extra, id)
		}
	}
	sort.Strings(extra)
	return append(ids, extra...)
}

// loadAgent reads one agent's step folders: their actions, and how each
// folder without one ended.
func (s *Snapshot) loadAgent(ctx context.Context, st storage.Store, id string, steps map[int]map[string]bool) (Agent, error) {
	a := Agent{Agent: coord.Agent{ID: id}}
	nums := make([]int, 0, len(steps))
	for n := range steps {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for i, n := range nums {
		files := steps[n]
		rec := StepRecord{Step: n}
		switch {
		case files[answerFile]:
			// A folder with both answer.json and vote.json counts as an answer.
			var f AnswerFile
			if err := ReadJSON(ctx, st, AnswerKey(id, n), &f); err != nil {
				if err := s.problemOrFail(AnswerKey(id, n), err); err != nil {
					return a, err
				}
				continue
			}
			ans := Answer{Agent: id, Step: n, Revision: len(a.Answers) + 1, Text: f.Answer, SeenSteps: f.SeenSteps, Timestamp: f.Timestamp}
			if hasPrefix(files, workspaceDir+"/") {
				ans.Workspace = WorkspacePrefix(id, n)
			}
			a.Answers = append(a.Answers, ans)
			rec.Action, rec.Seen, rec.At = coord.ActionNewAnswer, f.SeenSteps, parseTime(f.Timestamp)
		case files[voteFile]:
			var f VoteFile
			rec.Action = coord.ActionVote
			if err := ReadJSON(ctx, st, VoteKey(id, n), &f); err != nil {
				if err := s.problemOrFail(VoteKey(id, n), err); err != nil {
					return a, err
				}
				rec.Invalid = true
			} else if f.Target == "" {
				s.Problems = append(s.Problems, Problem{VoteKey(id, n), `no "target"; the vote counts as stale`})
				rec.Invalid = true
			} else {
				rec.Target, rec.Reason, rec.Seen = f.Target, f.Reason, f.SeenSteps
			}
			rec.At = parseTime(f.Timestamp)
		case files[stopFile]:
			var f StopFile
			if err := ReadJSON(ctx, st, StopKey(id, n), &f); err != nil {
				if err := s.problemOrFail(StopKey(id, n), err); err != nil {
					return a, err
				}
				continue
			}
			rec.Action, rec.Summary, rec.Status, rec.Seen, rec.At = coord.ActionStop, f.Summary, f.Status, f.SeenSteps, parseTime(f.Timestamp)
		default:
			// A folder without an action file: a step in progress (only
			// the last can be), one that ended without an action (its
			// launch.json says how), or a crash before anything was
			// saved, whose number is used again.
			last := i == len(nums)-1
			ended, err := s.endedWithout(ctx, st, id, n, files, last)
			if err != nil {
				return a, err
			}
			if ended == nil {
				continue
			}
			rec = *ended
		}
		a.Steps = append(a.Steps, rec)
	}
	return a, nil
}

// endedWithout is the record of a step folder without an action file, or
// nil for one that holds nothing yet (its number is used again).
func (s *Snapshot) endedWithout(ctx context.Context, st storage.Store, id string, n int, files map[string]bool, last bool) (*StepRecord, error) {
	rec := &StepRecord{Step: n}
	if !files[launchFile] {
		// A step mode run claims its folder before its first model call,
		// and checkpoints after it: either says the step runs.
		if last && (files[traceFile] || files[claimFile]) {
			rec.Running = true
			return rec, nil
		}
		if last {
			return nil, nil
		}
		rec.Ended = EndedGivenUp
		return rec, nil
	}
	var f LaunchFile
	if err := ReadJSON(ctx, st, LaunchKey(id, n), &f); err != nil {
		// Nobody can own a damaged marker: the folder stays closed, as
		// Commit and Fence take it.
		if err := s.problemOrFail(LaunchKey(id, n), err); err != nil {
			return nil, err
		}
		rec.Ended = EndedGivenUp
		return rec, nil
	}
	switch {
	case f.Fenced:
		rec.Ended, rec.Reason, rec.Attempts, rec.At = f.Ended, f.Reason, f.Attempts, parseTime(f.Timestamp)
		if rec.Ended == "" || (rec.Ended == EndedRetry && !last) {
			rec.Ended = EndedGivenUp
		}
	case last && files[traceFile]:
		rec.Running = true // committed, saving its outputs
	default:
		rec.Ended = EndedGivenUp
	}
	return rec, nil
}

func hasPrefix(files map[string]bool, prefix string) bool {
	for name := range files {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// problemOrFail records a bad file; a store failure (not a bad file) aborts
// the load, because a partial view would mislead the caller.
func (s *Snapshot) problemOrFail(key string, err error) error {
	var bad *badFileError
	if errors.As(err, &bad) || errors.Is(err, storage.ErrNotFound) {
		s.problem(key, err)
		return nil
	}
	return fmt.Errorf("read %s: %w", key, err)
}

func (s *Snapshot) problem(key string, err error) {
	s.Problems = append(s.Problems, Problem{Key: key, Reason: err.Error()})
}

// badFileError marks a file that was read but is not valid JSON of its kind.
type badFileError struct{ err error }

func (e *badFileError) Error() string { return "not valid JSON: " + e.err.Error() }
func (e *badFileError) Unwrap() error { return e.err }

// ReadJSON decodes the JSON file at key into v. A missing key wraps
// storage.ErrNotFound; a file that is not valid JSON of v's kind is a
// distinct error, so callers can tell "not yet written" from "damaged".
func ReadJSON(ctx context.Context, st storage.Store, key string, v any) error {
	data, err := st.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &badFileError{err}
	}
	return nil
}

// Include adds agents that have no files yet (no_action), so an external
// orchestrator can name its whole team before the first step.
func (s *Snapshot) Include(ids []string) error {
	for _, id := range ids {
		if err := CheckAgentID(id); err != nil {
			return err
		}
		if _, ok := s.Agent(id); !ok {
			s.Agents = append(s.Agents, Agent{Agent: coord.Agent{ID: id}})
		}
	}
	sort.SliceStable(s.Agents, func(i, j int) bool {
		if s.Info != nil {
			return false // session.json order stays
		}
		return s.Agents[i].ID < s.Agents[j].ID
	})
	s.settle()
	return nil
}

// KeepTeam drops the agents that are not in session.json's team — folders
// a person or another tool put there — and reports each as a problem, so
// they are neither counted nor relaunched. Without a recorded team it
// changes nothing.
func (s *Snapshot) KeepTeam() {
	if s.Info == nil || len(s.Info.Agents) == 0 {
		return
	}
	kept := s.Agents[:0]
	for _, a := range s.Agents {
		if slices.Contains(s.Info.Agents, a.ID) {
			kept = append(kept, a)
			continue
		}
		s.Problems = append(s.Problems, Problem{AgentPrefix(a.ID), fmt.Sprintf("agent %q is not in the session's team (%s in %s); ignored",
			a.ID, strings.Join(s.Info.Agents, ","), InfoKey)})
	}
	s.Agents = kept
	s.settle()
}

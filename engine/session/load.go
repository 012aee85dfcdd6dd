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

// Agent is everything a snapshot knows about one agent.
type Agent struct {
	coord.Agent
	Answers []Answer `json:"answers"` // in step order
	// History is every recorded action in step order; the re-votes of a
	// session are counted from it (coord.JudgeStored).
	History []coord.Cast `json:"history,omitempty"`
	// RunningStep is the step in progress when Running is set.
	RunningStep int `json:"running_step,omitempty"`
	// Launched is the highest step folder holding launch.json (a Temporal
	// step's commit or fence), 0 for none. Such a folder may hold no action
	// — its launch was fenced off, or has not finished saving — but its
	// number is taken: NextStep never reuses it.
	Launched int `json:"-"`
}

// NextStep is the number of the agent's next step in step mode: after its
// latest action and after every folder a Temporal launch holds.
func (a *Agent) NextStep() int { return max(a.LatestStep, a.Launched) + 1 }

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

// History is every agent's recorded actions, for coord.JudgeStored.
func (s *Snapshot) History() map[string][]coord.Cast {
	h := make(map[string][]coord.Cast, len(s.Agents))
	for _, a := range s.Agents {
		h[a.ID] = a.History
	}
	return h
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
	failing := map[string]bool{}                  // agents with a failures.json
	for _, key := range keys {
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
			if parts[1] == failuresFile {
				failing[agent] = true
			}
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
	team := coord.Ledger{Agents: make([]coord.Agent, len(ids))}
	for i, id := range ids {
		team.Agents[i].ID = id
	}
	subs := make([]Snapshot, len(ids))
	agents := make([]Agent, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			agents[i], errs[i] = subs[i].loadAgent(ctx, st, team, id, steps[id])
			if errs[i] == nil && failing[id] {
				errs[i] = subs[i].loadFailures(ctx, st, &agents[i])
			}
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

// loadAgent reads one agent's steps; team lists the session's agents, for
// the answer streaks.
func (s *Snapshot) loadAgent(ctx context.Context, st storage.Store, team coord.Ledger, id string, steps map[int]map[string]bool) (Agent, error) {
	a := Agent{Agent: coord.Agent{ID: id}}
	nums := make([]int, 0, len(steps))
	for n := range steps {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		files := steps[n]
		if files[launchFile] {
			a.Launched = n
		}
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
			coord.RecordAnswer(team, &a.Agent, n, f.SeenSteps)
			a.History = append(a.History, coord.Cast{Step: n, Action: coord.ActionNewAnswer})
		case files[voteFile]:
			var f VoteFile
			v := &coord.Vote{Voter: id, Step: n}
			if err := ReadJSON(ctx, st, VoteKey(id, n), &f); err != nil {
				if err := s.problemOrFail(VoteKey(id, n), err); err != nil {
					return a, err
				}
				v.Invalid = true
			} else if f.Target == "" {
				s.Problems = append(s.Problems, Problem{VoteKey(id, n), `no "target"; the vote counts as stale`})
				v.Invalid = true
			} else {
				v.Target, v.Reason, v.SeenSteps = f.Target, f.Reason, f.SeenSteps
			}
			a.LatestStep, a.LastAction, a.Vote, a.Stop = n, coord.ActionVote, v, nil
			a.History = append(a.History, coord.Cast{Step: n, Action: coord.ActionVote, Target: v.Target, SeenSteps: v.SeenSteps, Invalid: v.Invalid})
		case files[stopFile]:
			var f StopFile
			if err := ReadJSON(ctx, st, StopKey(id, n), &f); err != nil {
				if err := s.problemOrFail(StopKey(id, n), err); err != nil {
					return a, err
				}
				continue
			}
			a.LatestStep, a.LastAction, a.Vote = n, coord.ActionStop, nil
			a.Stop = &coord.Stop{Summary: f.Summary, Status: f.Status, SeenSteps: f.SeenSteps, Step: n}
			a.History = append(a.History, coord.Cast{Step: n, Action: coord.ActionStop, SeenSteps: f.SeenSteps})
		}
		// A folder without an action file is a step that has not finished:
		// it is not a step yet, and its number will be reused.
	}
	if n := len(nums); n > 0 && nums[n-1] > a.LatestStep {
		running, err := s.inProgress(ctx, st, id, nums[n-1], steps[nums[n-1]])
		if err != nil {
			return a, err
		}
		a.Running = running
		if running {
			a.RunningStep = nums[n-1]
		}
		// A folder without an action file is a step that never finished
		// (a crash mid-save): it is not a step and will be reused — unless
		// it holds launch.json (see Launched). A fenced folder never holds
		// an action file: its launch cannot write one (Commit), so it is
		// never a step, without reading the marker.
	}
	return a, nil
}

// inProgress reports whether a step folder without an action file is a
// step in progress: its checkpoint (trace.jsonl) exists, so the step
// started, and its launch.json does not say "fenced": true (an attempt
// that ended without an action, or was superseded: a dead step). A
// folder without a checkpoint never reached its first model turn's end,
// or is a crash mid-save; it blocks nothing.
func (s *Snapshot) inProgress(ctx context.Context, st storage.Store, id string, n int, files map[string]bool) (bool, error) {
	if !files[traceFile] {
		return false, nil
	}
	if !files[launchFile] {
		return true, nil
	}
	var f LaunchFile
	if err := ReadJSON(ctx, st, LaunchKey(id, n), &f); err != nil {
		// Unreadable: the step is taken to run, which blocks the end
		// rather than ending it early.
		return true, s.problemOrFail(LaunchKey(id, n), err)
	}
	return !f.Fenced, nil
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
}

// failuresFile is step mode's per-agent record of steps that ended without
// an action, in a row: agents/<id>/failures.json.
const failuresFile = "failures.json"

// FailuresKey is where an agent's failures.json lives.
func FailuresKey(agent string) string { return AgentPrefix(agent) + failuresFile }

// MaxStepFailures is how many steps in a row may end without an action
// before step mode drops the agent, as the workflow drops an agent whose
// step failed for good: an external orchestrator's loop then ends.
const MaxStepFailures = 3

// Failures is failures.json: the steps of an agent that ended without an
// action since its last action, and why the latest did.
type Failures struct {
	InARow int    `json:"in_a_row"`
	Last   string `json:"last"`
}

// loadFailures marks an agent failed when its failures.json counts
// MaxStepFailures steps in a row without an action.
func (s *Snapshot) loadFailures(ctx context.Context, st storage.Store, a *Agent) error {
	var f Failures
	if err := ReadJSON(ctx, st, FailuresKey(a.ID), &f); err != nil {
		return s.problemOrFail(FailuresKey(a.ID), err)
	}
	if f.InARow >= MaxStepFailures {
		a.Failed = true
		a.FailReason = fmt.Sprintf("%d steps in a row ended without an action; the last: %s", f.InARow, f.Last)
	}
	return nil
}

package step

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/checklist"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/evaluator"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/engine/tools"
)

// EvaluateOptions describe one round evaluation.
type EvaluateOptions struct {
	Store  storage.Store
	Config *config.Config
	// Round is the round the evaluation prepares (2, 3, …); Dir is where
	// its files go (session.SessionEvaluation(Round) when empty).
	Round    int
	Dir      session.EvalDir
	Task     string
	Criteria []string
	// Visible are the answers evaluated: each agent's latest at or before
	// the given step; nil means every agent's latest.
	Visible  map[string]int
	Pressure string
	Model    llm.Model
	// ModelName, Temperature and MaxTokens are the evaluator's backend's.
	ModelName    string
	Temperature  *float64
	MaxTokens    *int64
	Tag, Owner   string
	OnCheckpoint func(turns int)
	Logf         func(format string, args ...any)
	Now          func() time.Time
}

// Evaluation is a finished evaluation: where its files are and whether
// the next round can work from its plan.
type Evaluation struct {
	File   session.EvaluationFile
	Packet string // critique_packet.md's key
	Tasks  string // next_tasks.json's key, "" when none was given
}

// Evaluate runs the round evaluator over the session's current answers,
// the delivered workspaces fetched read-only, and stores
// evaluator/<round>/critique_packet.md, next_tasks.json (as given) and
// evaluation.json. A retry resumes its checkpoint without repeating a
// model call that returned.
func Evaluate(ctx context.Context, o EvaluateOptions) (*Evaluation, coord.Usage, error) {
	var usage coord.Usage
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Round < 2 {
		return nil, usage, fmt.Errorf("%w: the round evaluator prepares round 2 or later, not %d", ErrBadInput, o.Round)
	}
	snap, err := session.Load(ctx, o.Store)
	if err != nil {
		return nil, usage, err
	}
	snap.KeepTeam() // folders of agents outside the team are not counted
	if err := snap.Include(o.Config.AgentIDs()); err != nil {
		return nil, usage, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	tmp, err := os.MkdirTemp("", "conclave-evaluate-")
	if err != nil {
		return nil, usage, err
	}
	defer os.RemoveAll(tmp)
	p := &prep{store: o.Store, tmp: tmp, anon: coord.AnonymousIDs(teamIDs(snap))}
	ws := &tools.Workspace{Dir: filepath.Join(tmp, "workspace"), Peers: map[string]string{}}
	if err := os.MkdirAll(ws.Dir, 0o755); err != nil {
		return nil, usage, err
	}
	var answers []round.Answer
	var labels []string
	for i := range snap.Agents {
		a := &snap.Agents[i]
		shown := shownAnswer(a, o.Visible)
		if _, inTeam := p.anon[a.ID]; !inTeam || shown == nil {
			continue
		}
		ans, err := p.answer(ctx, a, shown, ws)
		if err != nil {
			return nil, usage, err
		}
		answers = append(answers, ans)
		labels = append(labels, ans.Label)
	}
	if len(answers) == 0 {
		return nil, usage, fmt.Errorf("%w: there is no answer to evaluate before round %d", ErrBadInput, o.Round)
	}
	sort.Strings(labels)
	crit := checklist.Criteria(o.Criteria, o.Config.Orchestrator.CoordinationMode == config.ModeDecomposition)
	if o.Dir == "" {
		o.Dir = session.SessionEvaluation(o.Round)
	}
	traceKey := o.Dir.Trace()
	data, err := o.Store.Get(ctx, traceKey)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, usage, fmt.Errorf("read the checkpoint %s: %w", traceKey, err)
	}
	in := evaluator.Input{
		Task: o.Task, Round: o.Round, Criteria: crit, Answers: answers, Pressure: o.Pressure, Workspace: ws,
		Model: o.Model, ModelName: o.ModelName, Temperature: o.Temperature, MaxTokens: o.MaxTokens,
		MaxAttempts: o.Config.Orchestrator.MaxEnforcementAttempts,
		Tag:         o.Tag, Binding: evaluationBinding(o, labels, crit),
		Prior:      prior(o.Store, traceKey, data, err == nil),
		Checkpoint: agent.Checkpointer[evaluator.State](o.Store, traceKey, 0, o.OnCheckpoint),
		Logf: func(f string, args ...any) {
			o.Logf("round evaluator before round %d: "+f, append([]any{o.Round}, args...)...)
		},
	}
	out, _, err := evaluator.Run(ctx, in)
	if err != nil {
		return nil, usage, err
	}
	usage = out.Usage
	ev := &Evaluation{Packet: o.Dir.Packet()}
	if err := o.Store.Put(ctx, ev.Packet, []byte(out.Packet.Markdown(o.Round, agent.Quote))); err != nil {
		return nil, usage, fmt.Errorf("write %s: %w", ev.Packet, err)
	}
	if len(out.NextTasks) > 0 {
		ev.Tasks = o.Dir.Tasks()
		if err := o.Store.Put(ctx, ev.Tasks, append(indent(out.NextTasks), '\n')); err != nil {
			return nil, usage, fmt.Errorf("write %s: %w", ev.Tasks, err)
		}
	}
	ev.File = session.EvaluationFile{Round: o.Round, Labels: labels, NextTasksValid: out.NextTasksError == "",
		NextTasksError: out.NextTasksError, Timestamp: session.Timestamp(o.Now())}
	if err := session.WriteJSON(ctx, o.Store, o.Dir.Summary(), ev.File); err != nil {
		return nil, usage, err
	}
	return ev, usage, nil
}

// evaluationBinding fingerprints what an evaluation was given, so a retry
// resumes only its own checkpoint.
func evaluationBinding(o EvaluateOptions, labels []string, crit []checklist.Criterion) string {
	data, err := json.Marshal(struct {
		Owner, Tag, Task, Pressure, Dir string
		Round                           int
		Labels                          []string
		Criteria                        []checklist.Criterion
	}{o.Owner, o.Tag, o.Task, o.Pressure, string(o.Dir), o.Round, labels, crit})
	if err != nil {
		panic(err) // strings and ints always encode
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// indent pretty-prints JSON the model gave; what cannot be re-indented is
// stored as given.
func indent(raw json.RawMessage) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return raw
	}
	return out
}

// Package step runs the agent-step engine (engine/agent) against storage:
// an agent step of a session (load the snapshot, show every answer
// anonymized, run the coordination policy with a storage-backed inbox and
// checkpoint, save the action), the final presentation, and a pipeline
// step (its workspace, checkpoint and call messages in its run folder).
// `conclave step` and the activities call it, so step mode and Temporal
// store exactly the same files.
package step

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/engine/tools"
)

// Options describe one step.
type Options struct {
	Store  storage.Store // the session's root
	Config *config.Config
	Agent  string
	Task   string
	// EvalCriteria nil means the session's eval_criteria.json, if any.
	EvalCriteria []string
	// Step is the step number; 0 means the agent's next one (step mode).
	Step int
	// Mode forces a step mode; empty chooses with coord.NextMode from the
	// config and limits (step mode), and in decomposition mode stops the
	// agent automatically when coord.AutoStop says a limit is reached.
	Mode  coord.Mode
	Tally map[string]int
	// AutoStop, when set, ends the step without a model call in a stop
	// with status complete and this summary (the workflow's decision,
	// coord.AutoStop); the stop's seen_steps are the answers it is shown.
	AutoStop string
	// Tag identifies this launch. A stored transcript is resumed only when
	// it was written for the same inputs (see binding), the tag included,
	// so a relaunch never continues a cancelled attempt.
	Tag string
	// Visible are the answers the step is shown: for each agent, its
	// latest answer at or before the given step (an agent missing here is
	// not shown). Nil shows every agent's latest answer — except that a
	// retry of a tagged launch is shown what its first attempt was shown.
	Visible map[string]int
	// Owner is the id of the session's owner (its workflow), part of the
	// checkpoint's binding; empty when the caller has none (step mode).
	Owner string
	// Exclusive makes the launch named by Tag commit to the step folder
	// (session.Commit: launch.json) before it writes its workspace, action
	// file and last_action.json; a folder fenced off or held by another
	// launch is never written (session.ErrSuperseded). Temporal steps set
	// it; it needs Tag and Step.
	Exclusive bool
	Model     llm.Model
	// Limits bound what the step stores; nil reads them from this
	// process's environment (LimitsFromEnv), as the worker's operator set.
	Limits *Limits
	// Evaluation is the round evaluation the workflow ran before this step
	// (orchestrator_managed_round_evaluator), 0 for none: its plan or
	// packet goes into the checklist policy.
	Evaluation int
	// Inject enables mid-step injection of peer answers from storage
	// (multi-agent runs); step mode preloads them. Human input arriving in
	// inbox/ is delivered mid-step either way.
	Inject bool
	// OnCheckpoint is told after every stored checkpoint (heartbeats).
	OnCheckpoint func(turns int)
	// Tools opens the agent's MCP servers and command tool for the step;
	// nil offers only the workspace tools.
	Tools ToolOpener
	// Logf reports what a person may want to know, such as a checkpoint
	// that was not resumed; nil discards it.
	Logf func(format string, args ...any)
	Now  func() time.Time
}

// Result is a finished step.
type Result struct {
	Step    int
	Label   string // agentN.M of a new answer
	Outcome *round.Outcome
	Saved   session.Saved
}

// Run runs the step and stores its outputs. Errors before the model runs
// wrap ErrBadInput; round errors (enforcement, model) are returned as is.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	agentCfg, ok := o.Config.Agent(o.Agent)
	if !ok {
		return nil, fmt.Errorf("%w: agent %q is not in the config", ErrBadInput, o.Agent)
	}
	if o.Exclusive && (o.Tag == "" || o.Step <= 0) {
		return nil, fmt.Errorf("%w: an exclusive step needs its launch tag and step number", ErrBadInput)
	}
	lim := o.Limits
	if lim == nil {
		l, err := LimitsFromEnv(os.Getenv)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		lim = &l
	}
	// The reads that do not depend on the snapshot run while it loads.
	pre := prefetch(ctx, o)
	snap, err := session.Load(ctx, o.Store)
	got := <-pre
	if err != nil {
		return nil, err
	}
	snap.KeepTeam() // folders of agents outside the team are not counted
	if got.launchErr != nil {
		return nil, got.launchErr // fenced before it started: no model call
	}
	if err := snap.Include(o.Config.AgentIDs()); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	criteria := o.EvalCriteria
	if criteria == nil {
		if criteria, err = got.criteria, got.criteriaErr; err != nil {
			return nil, err
		}
	}
	tmp, err := os.MkdirTemp("", "conclave-step-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	self, _ := snap.Agent(o.Agent)
	stepNo := o.Step
	if stepNo == 0 {
		stepNo = coord.NextStep(self.Agent)
	}
	traceKey := session.TraceKey(o.Agent, stepNo)
	data, err := got.trace, got.traceErr
	if stepNo != o.Step { // step mode: the step number was not known before
		data, err = o.Store.Get(ctx, traceKey)
	}
	fresh := stepNo == o.Step && errors.Is(err, storage.ErrNotFound)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("read the checkpoint %s: %w", traceKey, err)
	}
	stored := err == nil
	var peek *round.Transcript
	if stored {
		// Only a peek at the view the first attempt was shown: whether
		// the checkpoint is resumed is the engine's rule (agent.Prior).
		peek, _ = agent.ParseTranscript[round.State](data)
	}

	p := &prep{store: o.Store, tmp: tmp, anon: coord.AnonymousIDs(teamIDs(snap))}
	view := sameLaunchView(o, peek)
	in, err := p.view(ctx, snap, o, view, agentCfg, criteria, stepNo)
	if err != nil {
		return nil, err
	}
	if o.Visible == nil && view != nil && peek.Binding != in.Binding {
		// The first attempt's view is only borrowed for a checkpoint that
		// will be resumed; one that will not starts fresh on the session
		// as it is.
		if in, err = p.view(ctx, snap, o, nil, agentCfg, criteria, stepNo); err != nil {
			return nil, err
		}
	}
	if got.humanErr != nil {
		return nil, got.humanErr
	}
	in.Human = got.human
	// Human input is a non-peer payload: it reaches a running step at its
	// safe points whatever the peer settings; Inject gates peer answers.
	in.Inbox = &inbox{prep: p, self: o.Agent, ws: in.Workspace, peers: o.Inject}
	if !o.Inject {
		in.DisableInjection = true
	}
	in.Checkpoint = agent.Checkpointer[round.State](o.Store, traceKey, lim.TraceBytes, o.OnCheckpoint)
	in.Workspace.Limits = lim.Workspace
	in.Workspace.Limits.SessionRoom = lim.sessionRoom(snap.WorkspaceFiles)
	if o.Exclusive {
		in.Checkpoint = fencedCheckpoint(o, stepNo, in.Checkpoint)
	}
	in.Prior = prior(o.Store, traceKey, data, stored)
	in.Logf = func(f string, args ...any) { o.Logf("%s step %d: "+f, append([]any{o.Agent, stepNo}, args...)...) }

	orch := o.Config.Orchestrator
	decomposition := orch.CoordinationMode == config.ModeDecomposition
	autoStop := o.AutoStop
	if autoStop == "" && o.Mode == "" && decomposition {
		autoStop = coord.AutoStop(snap.Ledger(), o.Agent, orch.Limits())
	}
	in.Gate = &answerGate{store: o.Store, team: o.Config.AgentIDs(), agent: o.Agent, step: stepNo, tag: o.Tag,
		lim: orch.Limits(), decomposition: decomposition}

	claim := ""
	stepMode := !o.Exclusive && o.Tag == "" // no launch identity
	if stepMode {
		// One run per step folder, claimed before the model is called
		// and kept until the outputs are stored.
		if claim, err = session.ClaimStep(ctx, o.Store, o.Agent, stepNo, o.Now()); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		defer func() { _ = session.ReleaseStep(o.Store, o.Agent, stepNo, claim) }()
		in.Checkpoint = claimedCheckpoint(o, stepNo, claim, in.Checkpoint)
	}

	started := o.Now()
	var out *round.Outcome
	if autoStop == "" {
		closeTools, err := openTools(ctx, o.Tools, agentCfg, &in, toolScope(o, stepNo))
		if err != nil {
			return nil, err
		}
		defer closeTools()
	}
	if autoStop != "" {
		out = autoStopOutcome(in.Answers, autoStop)
	} else if out, err = round.Run(ctx, in); err != nil {
		return nil, err
	}
	if o.Exclusive {
		if err := session.Commit(ctx, o.Store, o.Agent, stepNo, o.Tag, o.Now()); err != nil {
			return nil, err
		}
	} else if stepMode {
		if err := session.CheckStepClaim(ctx, o.Store, o.Agent, stepNo, claim); err != nil {
			return nil, err
		}
	}
	saved, err := session.Save(ctx, o.Store, session.StepOutput{
		Agent: o.Agent, Step: stepNo, Action: out.Action, Answer: out.Answer,
		WorkspaceDir: nonEmptyDir(in.Workspace.Dir), Target: out.Target, Reason: out.Reason,
		Summary: out.Summary, StopStatus: out.StopStatus, SeenSteps: out.SeenSteps,
		Duration: o.Now().Sub(started), Now: o.Now(), Fresh: fresh,
		Cost: map[string]any{"input_tokens": out.Usage.InputTokens, "output_tokens": out.Usage.OutputTokens, "cost_usd": out.Usage.CostUSD},
	})
	if err != nil {
		return nil, err
	}
	if out.Transcript != nil { // an automatic stop has none
		if err := saveChecklist(ctx, o.Store, o.Agent, saved.Step, out.Transcript.State.Checklist); err != nil {
			return nil, err
		}
	}
	res := &Result{Step: saved.Step, Outcome: out, Saved: saved}
	if out.Action == coord.ActionNewAnswer {
		out.Answer = saved.Answer
		res.Label = coord.Label(p.anon[o.Agent], self.AnswerCount+1)
	}
	return res, nil
}

// autoStopOutcome is the stop of an agent at a decomposition limit, made
// without a model call: status complete, the limit as its summary, and
// seen_steps the answers the step is shown, like any stop.
func autoStopOutcome(shown []round.Answer, summary string) *round.Outcome {
	seen := map[string]int{}
	for _, a := range shown {
		seen[a.Agent] = a.Step
	}
	return &round.Outcome{Action: coord.ActionStop, Summary: summary, StopStatus: "complete", SeenSteps: seen}
}

// view is the step's input when it is shown visible (see Options.Visible),
// with its binding.
func (p *prep) view(ctx context.Context, snap *session.Snapshot, o Options, visible map[string]int, agentCfg *config.Agent, criteria []string, stepNo int) (round.Input, error) {
	o.Visible = visible
	in, err := p.input(ctx, snap, o, agentCfg)
	if err != nil {
		return in, err
	}
	in.Task, in.EvalCriteria, in.Tally, in.Tag = o.Task, criteria, o.Tally, o.Tag
	// The round timeouts: the initial one for the agent's first step.
	in.RoundTimeout, in.RoundTimeoutGrace = o.Config.Orchestrator.RoundTimeout(stepNo == 1)
	in.Now = o.Now
	dir, err := p.evaluation(ctx, o, &in, agentCfg, criteria, stepNo)
	if err != nil {
		return in, err
	}
	if in.Checklist, err = p.checklistPolicy(ctx, o.Config, in.Mode, criteria, dir, in.Workspace); err != nil {
		return in, err
	}
	in.Binding = binding(o.Owner, stepNo, &in)
	return in, nil
}

// prefetched holds the reads a step needs besides the snapshot.
type prefetched struct {
	criteria    []string
	criteriaErr error
	human       []string
	humanErr    error
	trace       []byte // the checkpoint of o.Step, when o.Step is known
	traceErr    error
	launchErr   error // an exclusive step's folder is not its own
}

// prefetch reads the evaluation criteria, the human inbox and the step's
// checkpoint concurrently; the channel delivers once all are done.
func prefetch(ctx context.Context, o Options) <-chan prefetched {
	out := make(chan prefetched, 1)
	go func() {
		var p prefetched
		var wg sync.WaitGroup
		if o.EvalCriteria == nil {
			wg.Go(func() { p.criteria, p.criteriaErr = SessionCriteria(ctx, o.Store) })
		}
		wg.Go(func() { p.human, p.humanErr = readInbox(ctx, o.Store, 0) })
		p.traceErr = storage.ErrNotFound
		if o.Step > 0 {
			wg.Go(func() { p.trace, p.traceErr = o.Store.Get(ctx, session.TraceKey(o.Agent, o.Step)) })
		}
		if o.Exclusive {
			wg.Go(func() { p.launchErr = session.CheckLaunch(ctx, o.Store, o.Agent, o.Step, o.Tag) })
		}
		wg.Wait()
		out <- p
	}()
	return out
}

// fencedCheckpoint stores a checkpoint only while the step folder is still
// open to the launch: once the workflow has fenced it off the step stops
// there (session.ErrSuperseded), so an abandoned step does not go on paying
// for model calls. A checkpoint that races the fence lands in a fenced
// folder, where nothing reads it.
func fencedCheckpoint(o Options, stepNo int, store func(context.Context, *round.Transcript) error) func(context.Context, *round.Transcript) error {
	return func(ctx context.Context, t *round.Transcript) error {
		if err := session.CheckLaunch(ctx, o.Store, o.Agent, stepNo, o.Tag); err != nil {
			return err
		}
		return store(ctx, t)
	}
}

// claimedCheckpoint stores a step-mode checkpoint only while the run holds
// its claim on the folder.
func claimedCheckpoint(o Options, stepNo int, token string, store func(context.Context, *round.Transcript) error) func(context.Context, *round.Transcript) error {
	return func(ctx context.Context, t *round.Transcript) error {
		if err := session.CheckStepClaim(ctx, o.Store, o.Agent, stepNo, token); err != nil {
			return err
		}
		return store(ctx, t)
	}
}

// ErrBadInput marks errors in what the caller asked for (exit code 1 in
// step mode, a non-retryable error in Temporal).
var ErrBadInput = errors.New("bad input")

// teamIDs are the agents anonymous labels are numbered over: the team
// session.json records (step mode's --agents, Temporal's config), else
// every agent the snapshot knows.
func teamIDs(snap *session.Snapshot) []string {
	if snap.Info != nil && len(snap.Info.Agents) > 0 {
		return snap.Info.Agents
	}
	return agentIDs(snap)
}

func agentIDs(snap *session.Snapshot) []string {
	ids := make([]string, len(snap.Agents))
	for i, a := range snap.Agents {
		ids[i] = a.ID
	}
	return ids
}

type prep struct {
	store storage.Store
	tmp   string
	anon  map[string]string
}

// answer turns a stored answer into what the model sees, fetching its
// workspace so the agent can read it under peers/agentN/.
func (p *prep) answer(ctx context.Context, a *session.Agent, latest *session.Answer, ws *tools.Workspace) (round.Answer, error) {
	anon := p.anon[a.ID]
	ans := round.Answer{Agent: a.ID, Label: coord.Label(anon, latest.Revision), Step: latest.Step, Text: latest.Text, Timestamp: latest.Timestamp}
	if latest.Workspace != "" {
		dir := filepath.Join(p.tmp, "peers", anon, session.StepName(latest.Step))
		if err := storage.GetDir(ctx, p.store, latest.Workspace, dir); err != nil {
			return ans, fmt.Errorf("fetch the workspace of %s: %w", ans.Label, err)
		}
		ws.Peers[anon] = dir
		ans.Workspace = dir
	}
	return ans, nil
}

func (p *prep) input(ctx context.Context, snap *session.Snapshot, o Options, agent *config.Agent) (round.Input, error) {
	ws := &tools.Workspace{Dir: filepath.Join(p.tmp, "workspace"), Peers: map[string]string{}}
	if err := os.MkdirAll(ws.Dir, 0o755); err != nil {
		return round.Input{}, err
	}
	var answers []round.Answer
	for i := range snap.Agents {
		if _, inTeam := p.anon[snap.Agents[i].ID]; !inTeam || shownAnswer(&snap.Agents[i], o.Visible) == nil {
			continue // not an answer, or files of an agent outside the team
		}
		ans, err := p.answer(ctx, &snap.Agents[i], shownAnswer(&snap.Agents[i], o.Visible), ws)
		if err != nil {
			return round.Input{}, err
		}
		answers = append(answers, ans)
	}
	self, _ := snap.Agent(o.Agent)
	orch := o.Config.Orchestrator
	mode := o.Mode
	if mode == "" {
		var ok bool
		mode, ok = coord.NextMode(snap.Ledger(), o.Agent, orch.CoordinationMode == config.ModeDecomposition, orch.Limits())
		if !ok {
			// Capped with no answer anywhere: step mode has always run such
			// a step in voting mode, where new_answer is still offered.
			mode = coord.ModeVoting
		}
	}
	in := round.Input{
		Agent: o.Agent, Agents: teamIDs(snap), SystemMessage: agent.SystemMessage, Subtask: agent.Subtask,
		Answers: answers, HasAnswered: self.AnswerCount > 0, Mode: mode, Model: o.Model,
		ModelName: agent.Backend.Model, Temperature: agent.Backend.Temperature, Workspace: ws,
		MaxAttempts:                orch.MaxEnforcementAttempts,
		MaxOverlap:                 orch.AnswerNoveltyRequirement.MaxOverlap(),
		DisableInjection:           orch.DisableInjection,
		DeferPeerUpdates:           orch.DeferPeerUpdatesUntilRestart,
		PeerUpdatesBeforeChecklist: orch.AllowMidstreamPeerUpdatesBeforeChecklistSubmit != nil && *orch.AllowMidstreamPeerUpdatesBeforeChecklistSubmit,
		MaxMidstreamInjections:     orch.MaxMidstreamInjectionsPerRound,
	}
	if agent.Backend.MaxTokens != nil {
		n := int64(*agent.Backend.MaxTokens)
		in.MaxTokens = &n
	}
	return in, nil
}

func nonEmptyDir(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return ""
	}
	return dir
}

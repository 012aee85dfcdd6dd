// Package activities holds Conclave's Temporal activities: each agent step,
// the final presentation, pipeline steps and small storage writes.
// Activities are methods on one Activities struct that carries the
// dependencies (store, model factory, clock), so tests build it with fakes.
// Their names, inputs and outputs are in package contract, which the
// workflows share without linking this package.
package activities

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/mcp"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/runes"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/step"
	"github.com/conclave-ai/conclave/engine/storage"
)

// Activities carries what every activity needs. One value serves all
// concurrent activities of a worker.
type Activities struct {
	Store  storage.Store // root under which each session is <session_id>/
	Models step.ModelFactory
	// Client and Namespace let SearchAttributesAvailable ask the server;
	// without a client the answer is false.
	Client    client.Client
	Namespace string
	// HeartbeatEvery is the heartbeat period of agent steps (default 10s).
	HeartbeatEvery time.Duration
	// Tools is what MCP servers and commands sessions may run on this
	// worker; nil runs none (a session that asks is refused at start).
	Tools *mcp.Registry
	// OnToolCall is told of every tool call that returned (metrics).
	OnToolCall func(tool string, failed bool, took time.Duration)
	Now        func() time.Time
}

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Activities) session(id string) (storage.Store, error) {
	if !contract.ValidSessionID(id) {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("session id %q cannot name a storage folder: %s", id, contract.SessionIDRule), contract.ErrTypeConfig, nil)
	}
	return storage.Sub(a.Store, id), nil
}

// AgentStep runs one step of one agent (engine/step) and stores its files.
func (a *Activities) AgentStep(ctx context.Context, in contract.AgentStepInput) (contract.AgentStepResult, error) {
	st, rec, err := a.owned(ctx, in.SessionID, in.SessionRef)
	if err != nil {
		return contract.AgentStepResult{}, err
	}
	mode := coord.Mode(in.Mode)
	if mode != "" && !mode.Valid() {
		return contract.AgentStepResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("agent step mode %q is not one of %s, %s, %s (or empty to choose from the limits)",
				in.Mode, coord.ModeVoting, coord.ModeVoteOnly, coord.ModeDecomposition), contract.ErrTypeConfig, nil)
	}
	inputs, err := inputs(ctx, st, rec, in.InputsHash)
	if err != nil {
		return contract.AgentStepResult{}, err
	}
	cfg, agent, model, err := a.prepare(inputs.Config, in.Agent)
	if err != nil {
		return contract.AgentStepResult{}, err
	}
	hb := a.heartbeat(ctx)
	defer hb.stop()
	o := cfg.Orchestrator
	// A new answer cancels running peers in restart mode; beating every
	// turn lets them stop at their next safe point.
	hb.everyTurn = o.UpdateMode == config.UpdateRestart && !o.DisableInjection
	res, err := step.Run(ctx, step.Options{
		Store: st, Config: cfg, Agent: agent.ID, Task: inputs.Task, EvalCriteria: inputs.Criteria,
		Step: in.Step, Mode: mode, Tally: in.Tally, AutoStop: in.AutoStop, Tag: strconv.Itoa(in.Launch), Owner: ownerName(in.Owner), Model: model,
		Evaluation: in.Evaluation, Visible: in.Visible, Exclusive: true,
		Inject:       o.UpdateMode != config.UpdateRestart && !o.DisableInjection,
		OnCheckpoint: hb.turns, Logf: warn(ctx), Now: a.now, Tools: a.toolOpener(ctx, hb),
	})
	if err != nil {
		cause := err
		err = classify(err)
		if stepOver(err) {
			// The step ended for good without an action: fence its folder,
			// so that nothing reading the session (session status) takes
			// its checkpoint for a step still running.
			if _, ferr := session.Fence(ctx, st, agent.ID, in.Step, strconv.Itoa(in.Launch), failureType(err), step.Ended(cause), a.now()); ferr != nil {
				warn(ctx)("fence %s step %d after it failed: %v", agent.ID, in.Step, ferr)
			}
		}
		return contract.AgentStepResult{}, err
	}
	out := res.Outcome
	return contract.AgentStepResult{
		Agent: agent.ID, Step: res.Step, Action: out.Action, Label: res.Label,
		AnswerPreview: contract.Preview(out.Answer), Target: out.Target, Reason: contract.Preview(out.Reason),
		Summary: contract.Preview(out.Summary), StopStatus: out.StopStatus, SeenSteps: out.SeenSteps,
		Key: res.Saved.Key, Usage: coord.Usage(out.Usage), Checklist: checklistSummary(out),
	}, nil
}

// checklistSummary is what the workflow keeps of a gated step's checklist.
func checklistSummary(out *round.Outcome) *coord.Checklist {
	if out.Transcript == nil || out.Transcript.State.Checklist == nil {
		return nil
	}
	s := out.Transcript.State.Checklist
	c := &coord.Checklist{Accepted: s.Accepted, Invalid: s.Invalid}
	if s.Last != nil {
		c.Verdict, c.Best = s.Last.Verdict, s.Last.Best
	}
	return c
}

// FenceStep closes an agent step's folder to one launch before the
// workflow abandons it (session.Fence), or reports that the launch has
// committed already and must be let finish.
func (a *Activities) FenceStep(ctx context.Context, in contract.FenceStepInput) (contract.FenceStepResult, error) {
	st, _, err := a.owned(ctx, in.SessionID, in.SessionRef)
	if err != nil {
		return contract.FenceStepResult{}, err
	}
	if err := session.CheckAgentID(in.Agent); err != nil || in.Step <= 0 || in.Launch <= 0 {
		return contract.FenceStepResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("cannot fence agent %q step %d launch %d: the agent id must be valid and the step and launch positive", in.Agent, in.Step, in.Launch),
			contract.ErrTypeConfig, err)
	}
	committed, err := session.Fence(ctx, st, in.Agent, in.Step, strconv.Itoa(in.Launch), in.Reason, "", a.now())
	return contract.FenceStepResult{Committed: committed}, err
}

// Present writes the final answer under final/.
func (a *Activities) Present(ctx context.Context, in contract.PresentInput) (contract.PresentResult, error) {
	st, rec, err := a.owned(ctx, in.SessionID, in.SessionRef)
	if err != nil {
		return contract.PresentResult{}, err
	}
	inputs, err := inputs(ctx, st, rec, in.InputsHash)
	if err != nil {
		return contract.PresentResult{}, err
	}
	strategy := config.FinalAnswerStrategy(in.Strategy)
	cfg, _, model, err := a.prepare(inputs.Config, in.Presenter)
	if err != nil && (strategy != config.FinalWinnerReuse || cfg == nil) {
		return contract.PresentResult{}, err
	}
	hb := a.heartbeat(ctx)
	defer hb.stop()
	final, usage, err := step.Present(ctx, step.PresentOptions{
		Store: st, Config: cfg, Presenter: in.Presenter, Task: inputs.Task, Strategy: strategy,
		EvalCriteria: inputs.Criteria, Model: model, Tag: "present", NoVote: in.NoVote, OnCheckpoint: hb.turns, Logf: warn(ctx), Now: a.now,
	})
	if err != nil {
		return contract.PresentResult{}, withUsage(classify(err), usage)
	}
	text, truncated := runes.Truncate(final.Answer, contract.MaxFinalAnswerBytes)
	return contract.PresentResult{Presenter: in.Presenter, Answer: text, Truncated: truncated, Key: session.FinalAnswerKey, Usage: coord.Usage(usage)}, nil
}

// WriteStatus stores status.json, the snapshot people and scripts read.
func (a *Activities) WriteStatus(ctx context.Context, in contract.WriteStatusInput) error {
	st, _, err := a.owned(ctx, in.SessionID, in.SessionRef)
	if err != nil {
		return err
	}
	return session.WriteJSON(ctx, st, session.StatusKey, in.Status)
}

// WriteInbox stores one human input where running agents look for it.
func (a *Activities) WriteInbox(ctx context.Context, in contract.WriteInboxInput) error {
	st, _, err := a.owned(ctx, in.SessionID, in.SessionRef)
	if err != nil {
		return err
	}
	return session.WriteJSON(ctx, st, session.InboxKey(in.Seq), session.InboxMessage{Seq: in.Seq, Text: in.Text, At: in.At})
}

// SearchAttributesAvailable tells the workflow whether it may upsert
// ConclavePhase and ConclaveWinner: upserting an unregistered attribute
// would fail every workflow task.
func (a *Activities) SearchAttributesAvailable(ctx context.Context) (bool, error) {
	if a.Client == nil {
		return false, nil
	}
	resp, err := a.Client.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: a.Namespace})
	if err != nil {
		return false, nil // an old server or missing permission: run without them
	}
	_, phase := resp.GetCustomAttributes()[contract.SearchAttrPhase]
	_, winner := resp.GetCustomAttributes()[contract.SearchAttrWinner]
	return phase && winner, nil
}

func (a *Activities) prepare(raw config.Config, agentID string) (*config.Config, *config.Agent, llm.Model, error) {
	cfg := raw
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, temporal.NewNonRetryableApplicationError("invalid config: "+err.Error(), contract.ErrTypeConfig, nil)
	}
	agent, ok := cfg.Agent(agentID)
	if !ok {
		return &cfg, nil, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent %q is not in the config", agentID), contract.ErrTypeConfig, nil)
	}
	model, err := a.Models(&cfg, agent)
	if err != nil {
		return &cfg, agent, nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeConfig, nil)
	}
	return &cfg, agent, model, nil
}

// warn is the engine's Logf in an activity: a warning in the worker's log,
// which the SDK's logger tags with the workflow, activity and attempt — a
// checkpoint that was not resumed, and why, is told there.
func warn(ctx context.Context) func(format string, args ...any) {
	return func(format string, args ...any) {
		if activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Warn(fmt.Sprintf(format, args...))
		}
	}
}

// stepOver reports a classified step error after which the step is over
// for good: the model's doing (enforcement, turn limit, round timeout, a
// rejected request), which no retry of the step changes.
func stepOver(err error) bool {
	switch failureType(err) {
	case contract.ErrTypeEnforcement, contract.ErrTypeTurnEnded, contract.ErrTypeAnswerRefused, contract.ErrTypeModel:
		return true
	}
	return false
}

func failureType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	return ""
}

// classify maps engine errors onto Temporal's retry semantics.
func classify(err error) error {
	var enf *round.EnforcementError
	var turns *round.TurnLimitError
	var me *llm.Error
	switch {
	case errors.As(err, &enf) && enf.TurnEnded() && enf.AnswerRefused():
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeAnswerRefused, err)
	case errors.As(err, &enf) && enf.TurnEnded():
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeTurnEnded, err)
	case errors.As(err, &enf) || errors.As(err, &turns):
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeEnforcement, err)
	case errors.Is(err, session.ErrSuperseded):
		// Nothing was written; the workflow has moved on from this launch.
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeSuperseded, err)
	case errors.As(err, new(*mcp.StartError)) || errors.As(err, new(*mcp.RefusedError)):
		// The same config on this worker fails the same way.
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeConfig, err)
	case errors.Is(err, step.ErrBadInput):
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeConfig, err)
	case errors.As(err, &me) && !me.Retryable:
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeModel, err)
	case errors.As(err, &me):
		return temporal.NewApplicationErrorWithOptions(err.Error(), contract.ErrTypeModelUnavailable,
			temporal.ApplicationErrorOptions{NextRetryDelay: me.RetryAfter, Cause: err})
	}
	return err // storage and network trouble: retried by policy
}

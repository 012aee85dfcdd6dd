package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/engine/pipeline/runner"
	"github.com/conclave-ai/conclave/engine/runes"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/step"
	"github.com/conclave-ai/conclave/engine/storage"
)

// pipelineAgent is the agent id a pipeline step's model is built for.
const pipelineAgent = "pipeline"

// InitPipeline stores pipeline.json and the project summary every step is
// given a rendering of (context.json), made once per run. With an owner (every run since
// runs have owners) it first creates owner.json exclusively, as
// InitSession does: a run id that exists already is refused unless it is
// this owner's, and nothing stored changes.
func (a *Activities) InitPipeline(ctx context.Context, in contract.InitPipelineInput) (contract.InitPipelineResult, error) {
	if err := contract.CheckPipeline(in); err != nil {
		return contract.InitPipelineResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
	}
	st, err := a.session(in.RunID)
	if err != nil {
		return contract.InitPipelineResult{}, err
	}
	data, err := json.Marshal(in)
	if err != nil {
		return contract.InitPipelineResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeConfig, err)
	}
	rec := session.OwnerFile{WorkflowID: in.Owner.WorkflowID, FirstRunID: in.Owner.FirstRunID, InputsHash: session.InputsHash(in.Input, data, nil)}
	if err := a.claim(ctx, st, pipelineFolder, in.RunID, rec); err != nil {
		return contract.InitPipelineResult{}, err
	}
	if err := session.WriteJSON(ctx, st, session.PipelineDefKey, in); err != nil {
		return contract.InitPipelineResult{}, err
	}
	out := contract.InitPipelineResult{Location: st.Location()}
	if strings.TrimSpace(in.Definition.Context) == "" {
		return out, nil
	}
	summary, usage, err := a.projectSummary(ctx, st, in)
	if err != nil {
		return out, err
	}
	out.Summary, out.Usage = &summary, usage
	return out, nil
}

// contextFile is context.json: the project summary of a run and a hash of
// the document it was made from.
type contextFile struct {
	SourceSHA256 string                  `json:"source_sha256"`
	Summary      pipeline.ProjectSummary `json:"summary"`
}

// projectSummary makes the run's project summary once: a retried init
// reuses the run's context.json, a resumed run the one of the run it
// resumes when the document is the same, so no step ever recomputes it.
func (a *Activities) projectSummary(ctx context.Context, st storage.Store, in contract.InitPipelineInput) (pipeline.ProjectSummary, coord.Usage, error) {
	sum := sha256.Sum256([]byte(in.Definition.Context))
	hash := hex.EncodeToString(sum[:])
	stored := func(from storage.Store) (pipeline.ProjectSummary, bool) {
		var f contextFile
		if session.ReadJSON(ctx, from, session.PipelineContextKey, &f) != nil || f.SourceSHA256 != hash {
			return pipeline.ProjectSummary{}, false
		}
		return f.Summary, true
	}
	if s, ok := stored(st); ok {
		return s, coord.Usage{}, nil
	}
	if in.ResumeFrom != "" && contract.ValidSessionID(in.ResumeFrom) {
		if old, err := a.session(in.ResumeFrom); err == nil {
			if s, ok := stored(old); ok {
				return s, coord.Usage{}, session.WriteJSON(ctx, st, session.PipelineContextKey, contextFile{SourceSHA256: hash, Summary: s})
			}
		}
	}
	var model func() (llm.Model, string, error)
	if b := in.Definition.Backend; b != nil {
		model = func() (llm.Model, string, error) {
			m, err := a.stepModel(b)
			return m, b.Model, err
		}
	}
	s, usage, err := runner.SummarizeContext(ctx, model, in.Definition.Context)
	if err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			return s, coord.Usage{}, err
		}
		return s, coord.Usage{}, classify(err)
	}
	if err := session.WriteJSON(ctx, st, session.PipelineContextKey, contextFile{SourceSHA256: hash, Summary: s}); err != nil {
		return s, coord.Usage{}, err
	}
	return s, coord.Usage(usage), nil
}

// PipelineStep runs one step of a pipeline in its own agent, checkpointing
// its transcript after every model call, and stores its output and the
// workspace as it left it under steps/<seq>-<name>/.
func (a *Activities) PipelineStep(ctx context.Context, in contract.PipelineStepInput) (contract.PipelineStepResult, error) {
	st, _, err := a.ownedFolder(ctx, pipelineFolder, in.RunID, in.SessionRef)
	if err != nil {
		return contract.PipelineStepResult{}, err
	}
	def, ok := in.Graph.Step(in.Step)
	if !ok || in.Seq <= 0 {
		return contract.PipelineStepResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("step %q (seq %d) is not a step of the pipeline", in.Step, in.Seq), contract.ErrTypeConfig, nil)
	}
	backend := def.Backend
	if backend == nil {
		backend = in.Backend
	}
	if backend == nil {
		return contract.PipelineStepResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("step %q has no backend and the pipeline has no default", in.Step), contract.ErrTypeConfig, nil)
	}
	model, err := a.stepModel(backend)
	if err != nil {
		return contract.PipelineStepResult{}, err
	}
	rin := runner.Input{
		Graph: in.Graph, Step: in.Step, Title: in.Title, Task: in.Input, Context: in.Context,
		Previous: in.Previous, Model: model, ModelName: backend.Model, Temperature: backend.Temperature,
	}
	if backend.MaxTokens != nil {
		n := int64(*backend.MaxTokens)
		rin.MaxTokens = &n
	}
	hb := a.heartbeat(ctx)
	defer hb.stop()
	started := a.now()
	ran, err := step.RunPipeline(ctx, step.PipelineOptions{
		Store: st, Seq: in.Seq, Step: rin, From: in.From, ResumeKey: in.ResumeKey, Return: in.Resume,
		OnCheckpoint: hb.turns, Logf: warn(ctx), Backend: backend, Tools: a.toolOpener(ctx, hb),
	})
	if err != nil {
		return contract.PipelineStepResult{}, classify(err)
	}
	out := ran.Outcome
	res := contract.PipelineStepResult{
		Seq: in.Seq, Step: in.Step, Folder: ran.Folder, Status: out.Status, Request: out.Request,
		MessagesKey: ran.MessagesKey, Evidence: ran.Evidence, Error: out.Error,
		Usage: coord.Usage(out.Usage), Turns: out.Turns, DurationMs: a.now().Sub(started).Milliseconds(),
	}
	// output.json is this result with the whole summary; history gets a
	// bounded one.
	full := res
	full.Summary = out.Summary
	if err := session.WriteJSON(ctx, st, session.StepOutputKey(ran.Folder), full); err != nil {
		return contract.PipelineStepResult{}, err
	}
	res.Summary, _ = runes.Truncate(out.Summary, contract.MaxSummaryBytes)
	return res, nil
}

// PipelineReuse copies the leading steps of an earlier run that completed
// into a new run, for `conclave pipeline resume`: the new run replays
// their results instead of running them again.
func (a *Activities) PipelineReuse(ctx context.Context, in contract.PipelineReuseInput) (contract.PipelineReuseResult, error) {
	if _, _, err := a.ownedFolder(ctx, pipelineFolder, in.RunID, in.SessionRef); err != nil {
		return contract.PipelineReuseResult{}, err
	}
	old, err := a.session(in.From)
	if err != nil {
		return contract.PipelineReuseResult{}, err
	}
	var prev contract.PipelineResult
	if err := session.ReadJSON(ctx, old, session.PipelineResultKey, &prev); err != nil {
		return contract.PipelineReuseResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("run %s has no readable %s to resume from: %v", in.From, session.PipelineResultKey, err), contract.ErrTypeConfig, nil)
	}
	var entries []contract.PipelineStepEntry
	for _, e := range prev.Steps {
		if e.Seq > 0 { // not_run entries have none
			entries = append(entries, e)
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Seq < entries[j].Seq })
	var out contract.PipelineReuseResult
	for i, e := range entries {
		if e.Seq != i+1 || (e.Status != pipeline.Completed && e.Status != pipeline.CallPending) {
			break
		}
		folder := pipeline.StepFolder(e.Seq, e.Name)
		var r contract.PipelineStepResult
		if err := session.ReadJSON(ctx, old, session.StepOutputKey(folder), &r); err != nil {
			break // a step whose output is gone runs again
		}
		if err := storage.CopyPrefix(ctx, a.Store, in.From+"/"+folder+"/", in.RunID+"/"+folder+"/"); err != nil {
			return contract.PipelineReuseResult{}, fmt.Errorf("copy %s of run %s: %w", folder, in.From, err)
		}
		r.Summary, _ = runes.Truncate(r.Summary, contract.MaxSummaryBytes)
		r.Reused = true
		out.Steps = append(out.Steps, r)
	}
	return out, nil
}

// AdoptSession stores a coordination step like any other step: its folder
// gets the workspace the step started from, the session's final workspace
// over it, and output.json.
func (a *Activities) AdoptSession(ctx context.Context, in contract.AdoptSessionInput) error {
	st, _, err := a.ownedFolder(ctx, pipelineFolder, in.RunID, in.SessionRef)
	if err != nil {
		return err
	}
	sess, err := a.session(in.Session)
	if err != nil {
		return err
	}
	if err := step.AdoptFinal(ctx, st, sess, in.Folder, in.From); err != nil {
		return fmt.Errorf("adopt session %s as %s: %w", in.Session, in.Folder, err)
	}
	return session.WriteJSON(ctx, st, session.StepOutputKey(in.Folder), in.Result)
}

// WritePipelineResult stores result.json, after every step.
func (a *Activities) WritePipelineResult(ctx context.Context, in contract.WritePipelineResultInput) error {
	st, _, err := a.ownedFolder(ctx, pipelineFolder, in.RunID, in.SessionRef)
	if err != nil {
		return err
	}
	return session.WriteJSON(ctx, st, session.PipelineResultKey, in.Result)
}

// stepModel builds a pipeline step's model through the worker's factory,
// so keys come from the worker's environment as for agents.
func (a *Activities) stepModel(b *config.Backend) (llm.Model, error) {
	cfg := config.Config{Agents: []config.Agent{{ID: pipelineAgent, Backend: *b}}}
	cfg.ApplyDefaults()
	model, err := a.Models(&cfg, &cfg.Agents[0])
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeConfig, nil)
	}
	return model, nil
}

package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/engine/pipeline/runner"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

// pipelineAgent is the agent id a pipeline step's model is built for.
const pipelineAgent = "pipeline"

// InitPipeline stores pipeline.json and the project context every step is
// given, summarised once when it is long.
func (a *Activities) InitPipeline(ctx context.Context, in contract.InitPipelineInput) (contract.InitPipelineResult, error) {
	st, err := a.session(in.RunID)
	if err != nil {
		return contract.InitPipelineResult{}, err
	}
	if err := session.WriteJSON(ctx, st, PipelineDefKey, in); err != nil {
		return contract.InitPipelineResult{}, err
	}
	out := contract.InitPipelineResult{Location: st.Location()}
	if strings.TrimSpace(in.Definition.Context) == "" {
		return out, nil
	}
	// A retried init reuses the summary it already paid for.
	if data, err := st.Get(ctx, PipelineContext); err == nil {
		out.Context = string(data)
		return out, nil
	}
	var model llm.Model
	var name string
	if len(in.Definition.Context) > runner.ContextVerbatimBytes {
		if in.Definition.Backend == nil {
			return out, temporal.NewNonRetryableApplicationError("the project context is long and must be summarised, but the pipeline has no default backend to do it", contract.ErrTypeConfig, nil)
		}
		if model, err = a.stepModel(in.Definition.Backend); err != nil {
			return out, err
		}
		name = in.Definition.Backend.Model
	}
	summary, usage, err := runner.SummarizeContext(ctx, model, name, in.Definition.Context)
	if err != nil {
		return out, classify(err)
	}
	if err := st.Put(ctx, PipelineContext, []byte(summary)); err != nil {
		return out, err
	}
	out.Context, out.Usage = summary, coord.Usage(usage)
	return out, nil
}

// PipelineStep runs one step of a pipeline in its own agent, checkpointing
// its transcript after every model call, and stores its output and the
// workspace as it left it under steps/<seq>-<name>/.
func (a *Activities) PipelineStep(ctx context.Context, in contract.PipelineStepInput) (contract.PipelineStepResult, error) {
	st, err := a.session(in.RunID)
	if err != nil {
		return contract.PipelineStepResult{}, err
	}
	step, ok := in.Graph.Step(in.Step)
	if !ok || in.Seq <= 0 {
		return contract.PipelineStepResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("step %q (seq %d) is not a step of the pipeline", in.Step, in.Seq), contract.ErrTypeConfig, nil)
	}
	backend := step.Backend
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
	folder := contract.StepFolder(in.Seq, in.Step)
	dir, err := os.MkdirTemp("", "conclave-step-*")
	if err != nil {
		return contract.PipelineStepResult{}, err
	}
	defer os.RemoveAll(dir)
	if in.From != "" {
		if err := storage.GetDir(ctx, st, in.From+"/workspace/", dir); err != nil {
			return contract.PipelineStepResult{}, fmt.Errorf("load the workspace of %s: %w", in.From, err)
		}
	}
	started := a.now()
	rin := runner.Input{
		Graph: in.Graph, Step: in.Step, Title: in.Title, Task: in.Input, Context: in.Context,
		Previous: in.Previous, Workspace: dir, Model: model, ModelName: backend.Model,
		Temperature: backend.Temperature,
	}
	if backend.MaxTokens != nil {
		n := int64(*backend.MaxTokens)
		rin.MaxTokens = &n
	}
	if rin.Transcript, err = loadTrace(ctx, st, folder); err != nil {
		return contract.PipelineStepResult{}, err
	}
	if rin.Transcript == nil && in.ResumeKey != "" {
		var saved []llm.Message
		if err := readJSON(ctx, st, in.ResumeKey, &saved); err != nil {
			return contract.PipelineStepResult{}, fmt.Errorf("load the messages step %q saved for its call: %w", in.Step, err)
		}
		rin.Resume = append(saved, in.Resume...)
	}
	hb := a.heartbeat(ctx)
	defer hb.stop()
	rin.Checkpoint = func(ctx context.Context, t *runner.Transcript) error {
		hb.turns(t.Turns)
		return session.WriteJSON(ctx, st, folder+"/trace.json", t)
	}
	out, t, err := runner.Run(ctx, rin)
	if err != nil {
		return contract.PipelineStepResult{}, classify(err)
	}
	res := contract.PipelineStepResult{
		Seq: in.Seq, Step: in.Step, Folder: folder, Status: out.Status, Request: out.Request,
		Error: out.Error, Usage: coord.Usage(out.Usage), Turns: out.Turns,
		DurationMs: a.now().Sub(started).Milliseconds(),
	}
	res.Summary, _ = contract.Truncate(out.Summary, contract.MaxSummaryBytes)
	for _, p := range out.Evidence {
		res.Evidence = append(res.Evidence, folder+"/workspace/"+strings.TrimPrefix(p, "./"))
	}
	if err := storage.PutDir(ctx, st, folder+"/workspace/", dir); err != nil {
		return contract.PipelineStepResult{}, fmt.Errorf("store the workspace of step %q: %w", in.Step, err)
	}
	if out.Status == pipeline.CallPending {
		res.MessagesKey = folder + "/messages.json"
		if err := session.WriteJSON(ctx, st, res.MessagesKey, t.Messages); err != nil {
			return contract.PipelineStepResult{}, err
		}
	}
	full := res
	full.Summary = out.Summary
	if err := session.WriteJSON(ctx, st, folder+"/output.json", full); err != nil {
		return contract.PipelineStepResult{}, err
	}
	return res, nil
}

// PipelineReuse copies the leading steps of an earlier run that completed
// into a new run, for `conclave pipeline resume`: the new run replays
// their results instead of running them again.
func (a *Activities) PipelineReuse(ctx context.Context, in contract.PipelineReuseInput) (contract.PipelineReuseResult, error) {
	if _, err := a.session(in.RunID); err != nil {
		return contract.PipelineReuseResult{}, err
	}
	old, err := a.session(in.From)
	if err != nil {
		return contract.PipelineReuseResult{}, err
	}
	var prev contract.PipelineResult
	if err := readJSON(ctx, old, PipelineResultKey, &prev); err != nil {
		return contract.PipelineReuseResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("run %s has no readable %s to resume from: %v", in.From, PipelineResultKey, err), contract.ErrTypeConfig, nil)
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
		folder := contract.StepFolder(e.Seq, e.Name)
		var r contract.PipelineStepResult
		if err := readJSON(ctx, old, folder+"/output.json", &r); err != nil {
			break // a step whose output is gone runs again
		}
		if err := storage.CopyPrefix(ctx, a.Store, in.From+"/"+folder+"/", in.RunID+"/"+folder+"/"); err != nil {
			return contract.PipelineReuseResult{}, fmt.Errorf("copy %s of run %s: %w", folder, in.From, err)
		}
		r.Summary, _ = contract.Truncate(r.Summary, contract.MaxSummaryBytes)
		r.Reused = true
		out.Steps = append(out.Steps, r)
	}
	return out, nil
}

// AdoptSession stores a coordination step like any other step: its folder
// gets the workspace the step started from, the session's final workspace
// over it, and output.json.
func (a *Activities) AdoptSession(ctx context.Context, in contract.AdoptSessionInput) error {
	st, err := a.session(in.RunID)
	if err != nil {
		return err
	}
	sess, err := a.session(in.Session)
	if err != nil {
		return err
	}
	dst := in.Folder + "/workspace/"
	if in.From != "" {
		if err := storage.CopyPrefix(ctx, st, in.From+"/workspace/", dst); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "conclave-adopt-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := storage.GetDir(ctx, sess, session.FinalPrefix+"workspace/", dir); err != nil {
		return fmt.Errorf("read the final workspace of session %s: %w", in.Session, err)
	}
	if err := storage.PutDir(ctx, st, dst, dir); err != nil {
		return err
	}
	return session.WriteJSON(ctx, st, in.Folder+"/output.json", in.Result)
}

// WritePipelineResult stores result.json, after every step.
func (a *Activities) WritePipelineResult(ctx context.Context, in contract.WritePipelineResultInput) error {
	st, err := a.session(in.RunID)
	if err != nil {
		return err
	}
	return session.WriteJSON(ctx, st, PipelineResultKey, in.Result)
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

func loadTrace(ctx context.Context, st storage.Store, folder string) (*runner.Transcript, error) {
	data, err := st.Get(ctx, folder+"/trace.json")
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err // storage trouble: retried
	}
	var t runner.Transcript
	if err := json.Unmarshal(data, &t); err != nil || len(t.Messages) == 0 {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the checkpoint %s/trace.json is damaged (%v); resuming from it would repeat paid calls, so the step stops", folder, err), contract.ErrTypeConfig, nil)
	}
	return &t, nil
}

func readJSON(ctx context.Context, st storage.Store, key string, v any) error {
	data, err := st.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

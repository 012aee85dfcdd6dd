package step

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/engine/pipeline/runner"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

// PipelineOptions describe one pipeline step to run against a run's store.
type PipelineOptions struct {
	Store storage.Store // the run's root, <run_id>/
	// Seq is the step's number in the run, assigned by the workflow, so a
	// retried step finds its folder and checkpoint again.
	Seq int
	// Step is what to run; its Workspace, Prior, Resume, Logf and
	// Checkpoint are filled in here.
	Step runner.Input
	// From is the folder whose workspace the step starts from; "" starts
	// with an empty workspace.
	From string
	// ResumeKey and Return bring a caller back from a call: the messages
	// stored at ResumeKey, then Return.
	ResumeKey string
	Return    []llm.Message
	// OnCheckpoint is told after every stored checkpoint (heartbeats).
	OnCheckpoint func(turns int)
	// Logf reports what a person may want to know, such as a checkpoint
	// that was not resumed; nil discards it.
	Logf func(format string, args ...any)
	// Backend and Tools give the step its MCP servers and command tool,
	// when Backend has any.
	Backend *config.Backend
	Tools   ToolOpener
}

// PipelineStep is a finished pipeline step, its files stored in Folder.
type PipelineStep struct {
	Folder  string
	Outcome *runner.Outcome
	// Evidence are the outcome's evidence files as stored, relative to
	// the run: <folder>/workspace/<path>.
	Evidence []string
	// MessagesKey holds the step's messages when it called another step.
	MessagesKey string
}

// RunPipeline runs one pipeline step in a temporary workspace loaded from
// the step it follows, resuming its checkpoint when it has one, and stores
// the workspace as the step left it (and a call's messages) in its folder.
func RunPipeline(ctx context.Context, o PipelineOptions) (*PipelineStep, error) {
	in := o.Step
	folder := pipeline.StepFolder(o.Seq, in.Step)
	dir, err := os.MkdirTemp("", "conclave-step-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if o.From != "" {
		if err := storage.GetDir(ctx, o.Store, session.StepWorkspacePrefix(o.From), dir); err != nil {
			return nil, fmt.Errorf("load the workspace of %s: %w", o.From, err)
		}
	}
	in.Workspace = dir
	traceKey := session.StepTraceKey(folder)
	// Only trace.jsonl is read: a folder written before it, with trace.json,
	// starts fresh. A stored checkpoint is resumed by the agent-step
	// engine's one rule (agent.Prior): one that cannot be — damaged,
	// hand-edited — is kept aside, reported through Logf, and the step
	// starts fresh, from its opening or its return messages below.
	data, err := o.Store.Get(ctx, traceKey)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, err // storage trouble: retried
	}
	in.Prior = prior(o.Store, traceKey, data, err == nil)
	in.Logf = func(f string, args ...any) {
		if o.Logf != nil {
			o.Logf("pipeline step %s: "+f, append([]any{folder}, args...)...)
		}
	}
	if o.ResumeKey != "" {
		var saved []llm.Message
		if err := session.ReadJSON(ctx, o.Store, o.ResumeKey, &saved); err != nil {
			return nil, fmt.Errorf("load the messages step %q saved for its call: %w", in.Step, err)
		}
		in.Resume = saved
		for _, m := range o.Return { // the called step's result is model output
			m.Content = agent.Quote(m.Content)
			in.Resume = append(in.Resume, m)
		}
	}
	in.Checkpoint = agent.Checkpointer[runner.State](o.Store, traceKey, 0, o.OnCheckpoint)
	if o.Backend != nil && o.Backend.HasTools() {
		if o.Tools == nil {
			return nil, fmt.Errorf("%w: step %q has tools (mcp_servers or enable_mcp_command_line), and this runner starts none", ErrBadInput, in.Step)
		}
		tb, closeTools, err := o.Tools(ctx, &config.Agent{ID: in.Step, Backend: *o.Backend}, dir)
		if err != nil {
			return nil, err
		}
		defer closeTools()
		in.Tools, in.CallScope = tb, o.Store.Location()+"/"+folder
	}
	out, t, err := runner.Run(ctx, in)
	if err != nil {
		return nil, err
	}
	res := &PipelineStep{Folder: folder, Outcome: out}
	for _, p := range out.Evidence {
		res.Evidence = append(res.Evidence, session.StepWorkspacePrefix(folder)+strings.TrimPrefix(p, "./"))
	}
	if err := storage.PutDir(ctx, o.Store, session.StepWorkspacePrefix(folder), dir); err != nil {
		return nil, fmt.Errorf("store the workspace of step %q: %w", in.Step, err)
	}
	if out.Status == pipeline.CallPending {
		res.MessagesKey = session.StepMessagesKey(folder)
		if err := session.WriteJSON(ctx, o.Store, res.MessagesKey, t.Messages); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// AdoptFinal stores a coordination session's outcome as a pipeline step's
// workspace: the workspace of folder from (if any), then the session's
// final workspace over it.
func AdoptFinal(ctx context.Context, run, sess storage.Store, folder, from string) error {
	dst := session.StepWorkspacePrefix(folder)
	if from != "" {
		if err := storage.CopyPrefix(ctx, run, session.StepWorkspacePrefix(from), dst); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "conclave-adopt-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := storage.GetDir(ctx, sess, session.FinalWorkspacePrefix, dir); err != nil {
		return fmt.Errorf("read the final workspace: %w", err)
	}
	return storage.PutDir(ctx, run, dst, dir)
}

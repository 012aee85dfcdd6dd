package step

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/conclave-ai/conclave/engine/agent"
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
	// Step is what to run; its Workspace, Transcript, Resume and
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

// ErrDamaged marks a stored checkpoint that cannot be parsed: the step
// stops, since starting over would pay again for the calls it holds.
var ErrDamaged = errors.New("the checkpoint is damaged")

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
	// starts fresh.
	data, err := o.Store.Get(ctx, traceKey)
	switch {
	case err == nil:
		t, err := agent.ParseTranscript[runner.State](data)
		if err != nil || len(t.Messages) == 0 {
			return nil, fmt.Errorf("%s: %w (%v); resuming from it would repeat paid calls, so the step stops", traceKey, ErrDamaged, err)
		}
		in.Transcript = t
	case !errors.Is(err, storage.ErrNotFound):
		return nil, err // storage trouble: retried
	case o.ResumeKey != "":
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
	in.Checkpoint = agent.Checkpointer[runner.State](o.Store, traceKey, o.OnCheckpoint)
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

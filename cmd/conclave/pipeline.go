package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/workflows"
)

type pipelineFlags struct {
	temporalFlags
	pipelinePath, scenario, configPath, id string
	detach                                 bool
	poll                                   time.Duration
}

func (f *pipelineFlags) addRun(cmd *cobra.Command) {
	f.add(cmd)
	f.addUI(cmd)
	cmd.Flags().StringVar(&f.pipelinePath, "pipeline", "", "pipeline YAML file (see docs/pipelines.md)")
	cmd.Flags().StringVar(&f.scenario, "scenario", "", "scenario directory: meta.yaml, steps/, prd.md")
	cmd.Flags().StringVar(&f.configPath, "config", "", "Conclave config whose one agent runs the steps (required with --scenario; with --pipeline it replaces the default backend)")
	cmd.Flags().StringVar(&f.id, "id", "", "run id, also the workflow id (default pipeline-<time>-<random>)")
	cmd.Flags().BoolVar(&f.detach, "detach", false, "print the run id and return without waiting")
	cmd.Flags().DurationVar(&f.poll, "poll", time.Second, "how often to refresh progress")
}

func newPipelineCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "pipeline", Short: "Run pipelines of named steps, one isolated agent per step"}
	var rf, sf, resf pipelineFlags
	var asJSON bool
	run := &cobra.Command{
		Use:   "run (--pipeline FILE | --scenario DIR --config AGENT.yaml) \"input\"",
		Short: "Start a pipeline run and follow it; exit 0 when every step completed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			def, err := rf.definition()
			if err != nil {
				return err
			}
			if p := contract.PipelineSizeProblems(def, args[0]); len(p) > 0 {
				return errors.New(strings.Join(p, "; "))
			}
			return withClient(&rf.temporalFlags, func(c client.Client) error {
				return startPipeline(cmd.Context(), c, &rf, workflows.PipelineInput{Definition: def, Input: args[0]}, cmd.OutOrStdout())
			})
		},
	}
	rf.addRun(run)
	status := &cobra.Command{
		Use:   "status <run-id>",
		Short: "Print a pipeline run's steps (result.json as it is now)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(&sf.temporalFlags, func(c client.Client) error {
				r, err := pipelineProgress(cmd.Context(), c, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(jsonOut{cmd.OutOrStdout()})
					enc.SetIndent("", "  ")
					return enc.Encode(r)
				}
				printPipeline(cmd.OutOrStdout(), r)
				return nil
			})
		},
	}
	sf.add(status)
	status.Flags().BoolVar(&asJSON, "json", false, "print result.json's JSON")
	resume := &cobra.Command{
		Use:   "resume <run-id> [--pipeline FILE | --scenario DIR --config AGENT.yaml | --config AGENT.yaml]",
		Short: "Start a new run that reuses the completed steps of <run-id> and continues from the step that failed",
		Long: "Resume starts a new run: every step <run-id> completed before its failure is taken over " +
			"with its stored files instead of running again, and the run continues from the failed step. " +
			"Without --pipeline or --scenario it runs the same definition and input as <run-id>; give them " +
			"when you changed a prompt to fix the cause; --config alone keeps the steps and changes the agent that runs them.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(&resf.temporalFlags, func(c client.Client) error {
				in, err := pipelineInputOf(cmd.Context(), c, args[0])
				if err != nil {
					return err
				}
				switch {
				case resf.pipelinePath != "" || resf.scenario != "":
					if in.Definition, err = resf.definition(); err != nil {
						return err
					}
				case resf.configPath != "":
					// Only the agent changes (a fixed key variable, another
					// model): the steps stay those of <run-id>.
					if in.Definition.Backend, err = backendOf(resf.configPath); err != nil {
						return err
					}
				}
				in.ResumeFrom = args[0]
				return startPipeline(cmd.Context(), c, &resf, in, cmd.OutOrStdout())
			})
		},
	}
	resf.addRun(resume)
	cmd.AddCommand(run, status, resume)
	return cmd
}

// definition loads the pipeline of --pipeline or --scenario, checked
// before anything runs.
func (f *pipelineFlags) definition() (contract.PipelineDefinition, error) {
	var backend *config.Backend
	if f.configPath != "" {
		var err error
		if backend, err = backendOf(f.configPath); err != nil {
			return contract.PipelineDefinition{}, err
		}
	}
	var def *pipeline.Definition
	var err error
	switch {
	case f.pipelinePath != "" && f.scenario != "":
		return contract.PipelineDefinition{}, errors.New("give --pipeline or --scenario, not both")
	case f.pipelinePath != "":
		if def, err = pipeline.LoadPipeline(f.pipelinePath); err == nil && backend != nil {
			def.Backend = backend
		}
	case f.scenario != "":
		if backend == nil {
			return contract.PipelineDefinition{}, errors.New("--scenario needs --config AGENT.yaml, the agent that runs the steps")
		}
		def, err = pipeline.LoadScenario(f.scenario, backend)
	default:
		return contract.PipelineDefinition{}, errors.New("give --pipeline FILE or --scenario DIR")
	}
	if err != nil {
		return contract.PipelineDefinition{}, err
	}
	return contract.PipelineDefinition{Title: def.Title, Graph: def.Graph, Context: def.Context, Backend: def.Backend}, nil
}

// backendOf reads the one agent of a config, whose backend runs a
// pipeline's steps.
func backendOf(path string) (*config.Backend, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	if len(cfg.Agents) != 1 {
		return nil, fmt.Errorf("%s: has %d agents; a pipeline's steps run with one, so give a config with exactly one agent", path, len(cfg.Agents))
	}
	b := cfg.Agents[0].Backend
	return &b, nil
}

func newPipelineID() string { return "pipeline" + strings.TrimPrefix(newWorkflowID(), "conclave") }

// startPipeline starts a run, prints its id first, and follows it to the
// end unless --detach: one line per step as it finishes.
func startPipeline(ctx context.Context, c client.Client, f *pipelineFlags, in workflows.PipelineInput, out io.Writer) error {
	if strings.TrimSpace(in.Input) == "" {
		return errors.New("the input is empty")
	}
	id := f.id
	if id == "" {
		id = newPipelineID()
	}
	title := in.Definition.Title
	if title == "" {
		title = "pipeline"
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: f.taskQueue, StaticSummary: fmt.Sprintf("%s · %d steps", title, len(in.Definition.Graph.Steps)),
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, contract.PipelineName, in)
	if err != nil {
		if running := alreadyRunning(ctx, c, "pipeline run", id, err); running != nil {
			return running
		}
		return fmt.Errorf("start the pipeline: %w", err)
	}
	fmt.Fprintln(out, id)
	fmt.Fprintf(out, "Web UI: %s\n", f.link(id))
	if in.ResumeFrom != "" {
		fmt.Fprintf(out, "resuming %s: its completed steps are reused\n", in.ResumeFrom)
	}
	if f.detach {
		return nil
	}
	done := make(chan error, 1)
	var res contract.PipelineResult
	go func() { done <- run.Get(ctx, &res) }()
	tick := time.NewTicker(f.poll)
	defer tick.Stop()
	w := newWatcher(c, &f.temporalFlags)
	var problems issues
	workerSeen, ticks := false, 0
	shown, running := 0, 0
	show := func(r contract.PipelineResult) {
		for _, s := range r.Steps {
			if s.Seq > shown {
				fmt.Fprintln(out, stepLine(s))
				shown = s.Seq
			}
		}
		if r.Current != "" && shown+1 > running {
			running = shown + 1
			fmt.Fprintf(out, "step %d · %s running…\n", running, r.Current)
		}
	}
	for {
		select {
		case err := <-done:
			if err != nil {
				var app *temporal.ApplicationError
				if !errors.As(err, &app) || app.Details(&res) != nil {
					return fmt.Errorf("pipeline %s: %w (details: %s)", id, err, f.link(id))
				}
			}
			show(res)
			fmt.Fprintf(out, "\n== %s · tokens %d in / %d out", res.Status, res.Usage.InputTokens, res.Usage.OutputTokens)
			if res.Reason != "" {
				fmt.Fprintf(out, " · %s", terminalLine(res.Reason))
			}
			fmt.Fprintf(out, "\nfiles: %s\n", res.Location)
			if res.Status != workflows.PipelineCompleted {
				return &exitError{code: 1, err: fmt.Errorf("pipeline %s ended %s; fix the cause and run `conclave pipeline resume %s`", id, res.Status, id)}
			}
			return nil
		case <-tick.C:
			ticks++
			if workerSeen && ticks%10 == 0 {
				workerSeen = false
			}
			found, retrying := w.problems(ctx, id, &workerSeen)
			if workerSeen {
				qctx, cancel := context.WithTimeout(ctx, callTimeout)
				r, err := pipelineProgress(qctx, c, id)
				cancel()
				if err != nil {
					found = append(found, issue{"progress-error", "the progress query failed: " + briefCause(err)})
				} else {
					show(r)
				}
			}
			fmt.Fprint(out, problems.report(append(found, retryIssues(retrying)...)))
		case <-ctx.Done():
			return fmt.Errorf("stopped following %s (the run goes on; `conclave cancel %s` stops it)", id, id)
		}
	}
}

func stepLine(s contract.PipelineStepEntry) string {
	line := fmt.Sprintf("step %d · %-16s %-14s %6.1fs  tokens %d", s.Seq, terminalLine(s.Name), terminalLine(string(s.Status)), float64(s.DurationMs)/1000, s.Usage.InputTokens+s.Usage.OutputTokens)
	if s.Reused {
		line += "  (reused)"
	}
	if len(s.Evidence) > 0 {
		line += "  evidence: " + terminalLine(strings.Join(s.Evidence, ", "))
	}
	if s.Error != "" {
		line += "  error: " + terminalLine(s.Error)
	}
	return line
}

func printPipeline(out io.Writer, r contract.PipelineResult) {
	fmt.Fprintf(out, "%s  %s", terminalLine(r.RunID), terminalLine(string(r.Status)))
	if r.Current != "" {
		fmt.Fprintf(out, " (now: %s)", terminalLine(r.Current))
	}
	fmt.Fprintln(out)
	for _, s := range r.Steps {
		if s.Status == pipeline.NotRun {
			fmt.Fprintf(out, "step - · %-16s %s\n", terminalLine(s.Name), terminalLine(string(s.Status)))
			continue
		}
		fmt.Fprintln(out, stepLine(s))
	}
}

func pipelineProgress(ctx context.Context, c client.Client, id string) (contract.PipelineResult, error) {
	var r contract.PipelineResult
	v, err := c.QueryWorkflow(ctx, id, "", contract.QueryProgress)
	if err != nil {
		return r, fmt.Errorf("query %s: %w", id, err)
	}
	return r, v.Get(&r)
}

func pipelineInputOf(ctx context.Context, c client.Client, id string) (workflows.PipelineInput, error) {
	var in workflows.PipelineInput
	v, err := c.QueryWorkflow(ctx, id, "", contract.QueryInput)
	if err != nil {
		return in, fmt.Errorf("read the input of run %s: %w", id, err)
	}
	return in, v.Get(&in)
}

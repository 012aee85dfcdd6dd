package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/step"
	"github.com/conclave-ai/conclave/engine/storage"
)

// exitNoAction is seed 000's exit code for a step that produced no action.
const exitNoAction = 2

type stepFlags struct {
	sessionDir, configPath, criteria, task string
	// agents is the whole team (--agents), recorded in session.json by
	// the session's first step.
	agents []string
}

func newStepCmd() *cobra.Command {
	var f stepFlags
	cmd := &cobra.Command{
		Use:   "step --session-dir DIR --config CFG --agents A,B,C --automation \"task\"",
		Short: "Run one agent for one step (seed 000's step mode), then exit",
		Long: "Loads every answer in the session directory, runs the config's single agent\n" +
			"until it calls new_answer or vote, and writes answer.json (with workspace/) or\n" +
			"vote.json and last_action.json. The team (--agents, recorded in session.json by\n" +
			"the first step) fixes the anonymous labels. In a re-vote the step is vote-only\n" +
			"and shows the tally. Exit 0: an action was taken; 2: the agent produced no\n" +
			"action; 1: bad input, including a session that cannot be read or written or\n" +
			"whose team is unknown (checked before any model call). Also callable as\n" +
			"`conclave --step …`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := runStep(cmd.Context(), f, os.Getenv, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return json.NewEncoder(jsonOut{cmd.OutOrStdout()}).Encode(res)
		},
	}
	cmd.Flags().StringVar(&f.sessionDir, "session-dir", "", "session directory, file:// or s3:// URL (required)")
	cmd.Flags().StringVar(&f.configPath, "config", "", "YAML config with exactly one agent (required)")
	cmd.Flags().StringVar(&f.criteria, "eval-criteria", "", "JSON file of evaluation criteria (default: the session's eval_criteria.json)")
	cmd.Flags().StringVar(&f.task, "automation", "", "the task (required)")
	cmd.Flags().StringSliceVar(&f.agents, "agents", nil, "every agent id of the team (required until the session's session.json records it; must match it after)")
	for _, name := range []string{"session-dir", "config", "automation"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// stepResult is what `conclave step` prints: one JSON line.
type stepResult struct {
	AgentID    string         `json:"agent_id"`
	Action     string         `json:"action"`
	StepNumber int            `json:"step_number"`
	Key        string         `json:"key"`
	Label      string         `json:"label,omitempty"`
	VoteTarget string         `json:"vote_target,omitempty"`
	Workspace  string         `json:"workspace_path,omitempty"`
	SeenSteps  map[string]int `json:"seen_steps"`
	Usage      coord.Usage    `json:"usage"`
}

func runStep(ctx context.Context, f stepFlags, getenv func(string) string, stderr io.Writer) (*stepResult, error) {
	if strings.TrimSpace(f.task) == "" {
		return nil, errors.New("--automation is empty: give the task")
	}
	cfg, err := config.Load(f.configPath)
	if err != nil {
		return nil, err
	}
	agent, err := cfg.Single()
	if err != nil {
		return nil, err
	}
	egress, err := egressFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	if err := egress.Check(agent.Backend, getenv); err != nil {
		return nil, err
	}
	model, err := step.NewModel(cfg, agent, egress, getenv)
	if err != nil {
		return nil, err
	}
	st, err := storage.Open(ctx, f.sessionDir)
	if err != nil {
		return nil, err
	}
	if err := step.CheckSession(ctx, st, agent.ID); err != nil {
		return nil, err // exit 1, and no model call was paid for
	}
	info, err := stepTeam(ctx, st, f.agents, agent.ID, f.task, cfg.Orchestrator, time.Now())
	if err != nil {
		return nil, err
	}
	plan, err := planStep(ctx, st, agent.ID, cfg.Orchestrator, info)
	if err != nil {
		return nil, err
	}
	if err := session.Reopen(ctx, st, agent.ID, plan.step, time.Now()); err != nil {
		return nil, fmt.Errorf("%w: reopen step %d of %s for another attempt: %v", step.ErrBadInput, plan.step, agent.ID, err)
	}
	var criteria []string
	if f.criteria != "" {
		data, err := os.ReadFile(f.criteria)
		if err != nil {
			return nil, fmt.Errorf("read --eval-criteria: %w", err)
		}
		if criteria, err = config.ParseCriteria(data, f.criteria); err != nil {
			return nil, err
		}
	}
	res, err := step.Run(ctx, step.Options{Store: st, Config: cfg, Agent: agent.ID, Task: f.task, EvalCriteria: criteria, Model: model,
		Mode: plan.mode, Tally: plan.tally, Tools: stepTools(egress, stderr),
		Logf: func(format string, args ...any) {
			fmt.Fprintln(stderr, "conclave:", terminalText(fmt.Sprintf(format, args...)))
		}})
	switch {
	case errors.Is(err, step.ErrBadInput):
		return nil, err
	case err != nil:
		if ferr := endAttempt(ctx, st, agent.ID, plan.step, err); ferr != nil {
			fmt.Fprintf(stderr, "conclave: could not mark step %d of %s as over (session status will show it running): %v\n", plan.step, agent.ID, ferr)
		}
		return nil, &exitError{code: exitNoAction, err: fmt.Errorf("agent %s took no action: %w", agent.ID, err)}
	}
	out := res.Outcome
	return &stepResult{
		AgentID: agent.ID, Action: string(out.Action), StepNumber: res.Step, Key: res.Saved.Key, Label: res.Label,
		VoteTarget: out.Target, Workspace: res.Saved.Workspace, SeenSteps: out.SeenSteps, Usage: out.Usage,
	}, nil
}

// stepAlias rewrites MassGen's `--step` spelling to the step subcommand, so
// an orchestrator written for `massgen --step …` can call conclave as is.
func stepAlias(args []string) []string {
	for i, a := range args {
		if a == "--step" {
			out := append([]string{"step"}, args[:i]...)
			return append(out, args[i+1:]...)
		}
	}
	return args
}

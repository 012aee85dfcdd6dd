package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/runes"
	"github.com/conclave-ai/conclave/workflows"
)

type runFlags struct {
	temporalFlags
	configPath, criteria, id string
	detach                   bool
	poll                     time.Duration
	// automation and strict are MassGen's habits (massgen.go).
	automation, strict bool
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run --config FILE [--criteria FILE] \"task\"",
		Short: "Start a multi-agent session and follow it to the final answer",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkConfig(f.configPath, f.strict, f.automation, cmd.ErrOrStderr()); err != nil {
				return err
			}
			in, err := sessionInput(f.configPath, f.criteria, args[0])
			if err != nil {
				return err
			}
			c, err := f.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			if f.automation {
				return followAutomation(cmd.Context(), c, &f, in, cmd.OutOrStdout())
			}
			return startAndFollow(cmd.Context(), c, &f, in, cmd.OutOrStdout())
		},
	}
	f.add(cmd)
	f.addUI(cmd)
	cmd.Flags().StringVar(&f.configPath, "config", "", "YAML config of the agents (required)")
	cmd.Flags().StringVar(&f.criteria, "criteria", "", "JSON file of evaluation criteria")
	cmd.Flags().StringVar(&f.id, "id", "", "workflow id, also the session id (default conclave-<time>-<random>)")
	cmd.Flags().BoolVar(&f.detach, "detach", false, "print the workflow id and return without waiting")
	cmd.Flags().DurationVar(&f.poll, "poll", time.Second, "how often to refresh progress")
	cmd.Flags().BoolVar(&f.automation, "automation", false, "quiet, machine-readable output: one PROGRESS line per change, then the final status.json (MassGen's --automation)")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "refuse a config with warnings (MassGen settings Conclave ignores)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// sessionInput reads the config and criteria into the workflow input. The
// config carries env var names, never keys.
func sessionInput(configPath, criteriaPath, task string) (workflows.CoordinationInput, error) {
	if strings.TrimSpace(task) == "" {
		return workflows.CoordinationInput{}, errors.New("the task is empty")
	}
	cfg, err := config.Load(configPath)
	if err != nil {
		return workflows.CoordinationInput{}, err
	}
	in := workflows.CoordinationInput{Task: task, Config: *cfg}
	if criteriaPath != "" {
		data, err := os.ReadFile(criteriaPath)
		if err != nil {
			return in, fmt.Errorf("read --criteria: %w", err)
		}
		if in.EvalCriteria, err = config.ParseCriteria(data, criteriaPath); err != nil {
			return in, err
		}
	}
	return in, nil
}

func newWorkflowID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "conclave-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// startSession starts the coordination workflow under f.id (or a new id).
func startSession(ctx context.Context, c client.Client, f *runFlags, in workflows.CoordinationInput) (client.WorkflowRun, string, error) {
	id := f.id
	if id == "" {
		id = newWorkflowID()
	}
	summary := runes.Clip(in.Task, 120)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: f.taskQueue, StaticSummary: summary,
		StaticDetails: fmt.Sprintf("Conclave session with %d agents: %s", len(in.Config.Agents), strings.Join(in.Config.AgentIDs(), ", ")),
		// Without it the SDK hands back the running session under that id,
		// and run would follow someone else's task as if it were this one.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		// A session id is used once: its folder belongs to its first run,
		// which would refuse a second one, and the failed second run would
		// then be what `conclave answer` shows.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, contract.CoordinationName, in)
	if err != nil {
		if running := alreadyRunning(ctx, c, "session", id, err); running != nil {
			return nil, id, running
		}
		return nil, id, fmt.Errorf("start the session: %w", err)
	}
	return run, id, nil
}

// alreadyRunning turns the server's refusal to start a second workflow
// under a running one's id into one line that says what to do instead;
// nil for any other error.
func alreadyRunning(ctx context.Context, c client.Client, what, id string, err error) error {
	var taken *serviceerror.WorkflowExecutionAlreadyStarted
	if !errors.As(err, &taken) {
		return nil
	}
	state, started := "is already running", ""
	if d, derr := c.DescribeWorkflowExecution(ctx, id, ""); derr == nil {
		info := d.GetWorkflowExecutionInfo()
		if t := info.GetStartTime(); t != nil {
			started = "started " + t.AsTime().UTC().Format(time.RFC3339)
		}
		if st := info.GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && st != enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED {
			// A session id is used once (WorkflowIDReusePolicy above).
			state = "already exists and has ended"
			started = strings.TrimPrefix(strings.ToLower(st.String()), "workflow_execution_status_") + ", " + started
		}
	}
	if started != "" {
		state += " (" + strings.TrimSuffix(started, ", ") + ")"
	}
	hint := fmt.Sprintf("use `conclave status %s` or `conclave answer %s`, or choose another --id", id, id)
	if what == "pipeline run" {
		hint = fmt.Sprintf("use `conclave pipeline status %s`, or choose another --id", id)
	}
	return &detailedError{msg: fmt.Sprintf("%s %s %s; %s", what, id, state, hint), err: err}
}

// sessionFailed is the one line for a session that ended in failure. A
// session whose folder belongs to another workflow run (an earlier session
// with this id whose history the server no longer keeps) says so briefly.
func sessionFailed(id string, err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == contract.ErrTypeSessionOwned {
		return fmt.Sprintf("session %s was refused: its session folder belongs to an earlier session with this id; nothing was changed; choose another --id", id)
	}
	return fmt.Sprintf("session %s failed: %s", id, briefCause(err))
}

func startAndFollow(ctx context.Context, c client.Client, f *runFlags, in workflows.CoordinationInput, out io.Writer) error {
	run, id, err := startSession(ctx, c, f, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "session %s started\nWeb UI: %s\n", id, f.link(id))
	if f.detach {
		return nil
	}
	done, res := await(ctx, run)
	tick := time.NewTicker(f.poll)
	defer tick.Stop()
	w := newWatcher(c, &f.temporalFlags)
	var shown issues
	last, workerSeen, ticks := "", false, 0
	for {
		select {
		case err := <-done:
			if err != nil {
				// The Web UI link was printed when the session started.
				return &detailedError{msg: sessionFailed(id, err), err: err}
			}
			printResult(out, *res, f.link(id))
			return nil
		case <-tick.C:
			ticks++
			if workerSeen && ticks%10 == 0 {
				workerSeen = false // workers come and go: look again now and then
			}
			found, retrying, s := w.check(ctx, id, &workerSeen)
			if s != nil {
				if line := progress(*s, retrying, w.tools); line != last {
					fmt.Fprint(out, line)
					last = line
				}
			}
			fmt.Fprint(out, shown.report(append(found, retryIssues(retrying)...)))
		case <-ctx.Done():
			return fmt.Errorf("stopped following %s (the session goes on; `conclave cancel %s` stops it)", id, id)
		}
	}
}

func queryStatus(ctx context.Context, c client.Client, id string) (coord.Status, error) {
	var s coord.Status
	v, err := c.QueryWorkflow(ctx, id, "", contract.QueryStatus)
	if err != nil {
		return s, err
	}
	return s, v.Get(&s)
}

// progress renders the live view: one line per agent plus totals. An
// agent whose step Temporal is retrying says so on its line.
func progress(s coord.Status, retrying []retryingStep, tools map[string]string) string {
	attempts := map[string]int32{}
	for _, r := range retrying {
		agent, _, _ := strings.Cut(r.Step, " · ") // summaries read "agent_b · step 2"
		attempts[agent] = r.Attempt
	}
	var b strings.Builder
	fmt.Fprintf(&b, "— %s · tokens %d in / %d out · cost %s\n", s.Phase, s.Usage.InputTokens, s.Usage.OutputTokens, s.Usage.Cost())
	ids := make([]string, 0, len(s.Agents))
	for id := range s.Agents {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		a := s.Agents[id]
		vote := ""
		if a.VoteTarget != "" {
			vote = " → " + a.VoteTarget
			if a.VoteStale {
				vote += " (stale)"
			}
		}
		if a.State == coord.StateFailed && a.FailReason != "" {
			fmt.Fprintf(&b, "  %-12s %-9s %s\n", id, a.State, terminalLine(a.FailReason))
			continue
		}
		retry := ""
		if n, ok := attempts[id]; ok {
			retry = fmt.Sprintf(" · retrying (attempt %d)", n)
		}
		fmt.Fprintf(&b, "  %-12s %-9s step %d · answers %d%s%s%s%s\n", id, a.State, a.LatestStep, a.AnswerCount, vote, checklistNote(a.Checklist), tools[id], retry)
	}
	return b.String()
}

// checklistNote is an agent's latest checklist on its progress line.
func checklistNote(c *coord.Checklist) string {
	if c == nil || c.Verdict == "" {
		return ""
	}
	note := " · checklist " + c.Verdict
	if c.Best != "" {
		note += " (best " + c.Best + ")"
	}
	return note
}

func printResult(out io.Writer, r workflows.CoordinationResult, link string) {
	fmt.Fprintf(out, "\n== %s: winner %s · votes %s · tokens %d in / %d out · cost %s\n\n%s\n\n",
		r.Status, r.Winner, formatVotes(r.Votes), r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.Cost(), terminalText(r.FinalAnswer))
	for _, id := range slices.Sorted(maps.Keys(r.FailedAgents)) {
		fmt.Fprintf(out, "dropped %s: %s\n", id, terminalLine(r.FailedAgents[id]))
	}
	if r.PresentationFallback != "" {
		fmt.Fprintf(out, "the stored answer was used as is: %s\n", terminalLine(r.PresentationFallback))
	}
	if r.Truncated {
		fmt.Fprintln(out, "(the answer is longer; the whole text is in the session's final/answer.md)")
	}
	fmt.Fprintf(out, "session files: %s\nWeb UI: %s\n", r.Session, link)
}

func formatVotes(v map[string]int) string {
	data, _ := json.Marshal(v)
	return string(data)
}

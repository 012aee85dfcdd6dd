package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/workflows"
)

// The small commands that act on a running or finished session by id.
func newManageCmds() []*cobra.Command {
	status := &cobra.Command{
		Use: "status <workflow-id>", Short: "Print a session's coordination state as JSON", Args: cobra.ExactArgs(1),
	}
	answer := &cobra.Command{
		Use: "answer <workflow-id>", Short: "Wait for a session and print its final answer", Args: cobra.ExactArgs(1),
	}
	say := &cobra.Command{
		Use: "say <workflow-id> \"text\"", Short: "Send human input to a running session's agents", Args: cobra.ExactArgs(2),
	}
	cancel := &cobra.Command{
		Use: "cancel <workflow-id>", Short: "Cancel a session (every stored answer is kept)", Args: cobra.ExactArgs(1),
	}
	var tf [4]temporalFlags
	for i, cmd := range []*cobra.Command{status, answer, say, cancel} {
		tf[i].add(cmd)
	}
	status.RunE = func(cmd *cobra.Command, args []string) error {
		return withClient(&tf[0], func(c client.Client) error {
			v, err := sessionStatus(cmd.Context(), c, &tf[0], args[0])
			if err != nil {
				return err
			}
			enc := json.NewEncoder(jsonOut{cmd.OutOrStdout()})
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		})
	}
	answer.RunE = func(cmd *cobra.Command, args []string) error {
		return withClient(&tf[1], func(c client.Client) error {
			var r workflows.CoordinationResult
			if err := c.GetWorkflow(cmd.Context(), args[0], "").Get(cmd.Context(), &r); err != nil {
				return &detailedError{msg: fmt.Sprintf("session %s: %s", args[0], briefCause(err)), err: err}
			}
			fmt.Fprintln(cmd.OutOrStdout(), textFor(cmd.OutOrStdout(), r.FinalAnswer))
			return nil
		})
	}
	say.RunE = func(cmd *cobra.Command, args []string) error {
		text := strings.TrimSpace(args[1])
		return withClient(&tf[2], func(c client.Client) error {
			h, err := c.UpdateWorkflow(cmd.Context(), client.UpdateWorkflowOptions{
				WorkflowID: args[0], UpdateName: contract.UpdateHumanInput,
				Args: []any{workflows.HumanInput{Text: text}}, WaitForStage: client.WorkflowUpdateStageCompleted,
			})
			if err != nil {
				return &detailedError{msg: fmt.Sprintf("send to %s: %s", args[0], briefCause(err)), err: err}
			}
			var seq int
			if err := h.Get(cmd.Context(), &seq); err != nil {
				return &detailedError{msg: fmt.Sprintf("send to %s: %s", args[0], briefCause(err)), err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "delivered as input #%d; agents see it at their next step boundary\n", seq)
			return nil
		})
	}
	cancel.RunE = func(cmd *cobra.Command, args []string) error {
		return withClient(&tf[3], func(c client.Client) error {
			d, err := c.DescribeWorkflowExecution(cmd.Context(), args[0], "")
			if err != nil {
				if isNotFound(err) {
					return fmt.Errorf("no session %s in namespace %s", args[0], tf[3].namespace)
				}
				return &detailedError{msg: fmt.Sprintf("cancel %s: %s", args[0], briefCause(err)), err: err}
			}
			if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				return &exitError{code: 1, err: fmt.Errorf("session %s already ended (%s); there is nothing to cancel", args[0], executionName(st))}
			}
			if err := c.CancelWorkflow(cmd.Context(), args[0], ""); err != nil {
				return fmt.Errorf("cancel %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cancellation requested for %s; stored answers are kept\n", args[0])
			return nil
		})
	}
	return []*cobra.Command{status, answer, say, cancel}
}

func withClient(tf *temporalFlags, fn func(client.Client) error) error {
	c, err := tf.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(c)
}

// statusView is what `conclave status` prints: the session's status query,
// plus what only Temporal knows: steps being retried, and warnings (no
// worker, a failing query).
type statusView struct {
	*coord.Status
	// Execution is Temporal's state of the workflow: Running, Completed, …
	Execution string         `json:"execution"`
	Retrying  []retryingStep `json:"retrying,omitempty"`
	Warnings  []string       `json:"warnings,omitempty"`
}

func sessionStatus(ctx context.Context, c client.Client, tf *temporalFlags, id string) (statusView, error) {
	dctx, cancel := context.WithTimeout(ctx, callTimeout)
	d, err := c.DescribeWorkflowExecution(dctx, id, "")
	cancel()
	if err != nil {
		if isNotFound(err) {
			return statusView{}, fmt.Errorf("no session %s in namespace %s", id, tf.namespace)
		}
		return statusView{}, &detailedError{msg: fmt.Sprintf("describe %s: %s", id, briefCause(err)), err: err}
	}
	v := statusView{Execution: executionName(d.GetWorkflowExecutionInfo().GetStatus())}
	workerSeen := false
	w := newWatcher(c, tf)
	w.grace = 0 // asked once: say what is true now
	found, retrying, s := w.check(ctx, id, &workerSeen)
	v.Status, v.Retrying = s, retrying
	for _, is := range found {
		v.Warnings = append(v.Warnings, is.text)
	}
	return v, nil
}

// executionName is the workflow status as the Web UI names it.
func executionName(s enumspb.WorkflowExecutionStatus) string {
	name := strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_")
	if name == "" {
		return "Unknown"
	}
	return strings.ToUpper(name[:1]) + strings.ToLower(name[1:])
}

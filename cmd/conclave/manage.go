package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
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
			s, err := queryStatus(cmd.Context(), c, args[0])
			if err != nil {
				return fmt.Errorf("query %s: %w", args[0], err)
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		})
	}
	answer.RunE = func(cmd *cobra.Command, args []string) error {
		return withClient(&tf[1], func(c client.Client) error {
			var r workflows.CoordinationResult
			if err := c.GetWorkflow(cmd.Context(), args[0], "").Get(cmd.Context(), &r); err != nil {
				return fmt.Errorf("session %s: %w", args[0], err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), r.FinalAnswer)
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
				return fmt.Errorf("send to %s: %w", args[0], err)
			}
			var seq int
			if err := h.Get(cmd.Context(), &seq); err != nil {
				return fmt.Errorf("send to %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "delivered as input #%d; agents see it at their next step boundary\n", seq)
			return nil
		})
	}
	cancel.RunE = func(cmd *cobra.Command, args []string) error {
		return withClient(&tf[3], func(c client.Client) error {
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

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

func newSessionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Inspect a session stored in a directory or bucket",
	}
	var dir string
	var agents []string
	status := &cobra.Command{
		Use:   "status --session-dir DIR",
		Short: "Print the coordination state of a step-mode session as JSON",
		Long: "Prints phase, per-agent state, stale votes, the relaunch set and consensus\n" +
			"(rule majority, as step mode defines it). External orchestrators call this to\n" +
			"decide which agents to launch next. Unreadable files are listed on stderr.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openSessionDir(cmd.Context(), dir)
			if err != nil {
				return err
			}
			snap, err := session.Load(cmd.Context(), st)
			if err != nil {
				return err
			}
			if err := snap.Include(agents); err != nil {
				return fmt.Errorf("--agents: %w", err)
			}
			for _, p := range snap.Problems {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", p)
			}
			out := stepModeStatus(snap)
			usage, problems := storedUsage(cmd.Context(), st, out.Agents)
			out.Usage = usage
			for _, p := range problems {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", p)
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(out)
		},
	}
	status.Flags().StringVar(&dir, "session-dir", "", "session directory, file:// or s3:// URL (required)")
	status.Flags().StringSliceVar(&agents, "agents", nil, "agent ids of the team; those without files yet show as no_action")
	_ = status.MarkFlagRequired("session-dir")
	cmd.AddCommand(status)
	return cmd
}

// stepModeStatus applies seed 000's consensus rule to a stored session.
func stepModeStatus(snap *session.Snapshot) coord.Status {
	l := snap.Ledger()
	phase := "coordinating"
	if coord.Decide(l, coord.RuleMajority).Reached {
		phase = "done"
	}
	return coord.Summarize(l, coord.RuleMajority, phase)
}

// openSessionDir opens an existing session; unlike storage.Open it refuses a
// directory that does not exist, since a typo must not look like an empty session.
func openSessionDir(ctx context.Context, dir string) (storage.Store, error) {
	if dir == "" {
		return nil, fmt.Errorf("--session-dir is empty: give the session directory")
	}
	if !strings.Contains(dir, "://") || strings.HasPrefix(dir, "file://") {
		path := strings.TrimPrefix(dir, "file://")
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("session directory %s does not exist (check --session-dir)", path)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("session directory %s is a file, not a directory", path)
		}
	}
	return storage.Open(ctx, dir)
}

// storedUsage sums the usage recorded in the steps' transcripts (the first
// line of each trace.jsonl holds the step's usage, cost included) of the
// given agents, and of the final presentation.
func storedUsage(ctx context.Context, st storage.Store, agents map[string]coord.AgentStatus) (coord.Usage, []string) {
	var total coord.Usage
	var problems []string
	var keys []string
	for _, id := range sortedKeys(agents) {
		listed, err := st.List(ctx, session.AgentPrefix(id))
		if err != nil {
			problems = append(problems, fmt.Sprintf("list the steps of %s: %v", id, err))
			continue
		}
		keys = append(keys, listed...)
	}
	keys = append(keys, session.FinalPrefix+"trace.jsonl")
	for _, key := range keys {
		if path.Base(key) != "trace.jsonl" {
			continue
		}
		data, err := st.Get(ctx, key)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		first, _, _ := bytes.Cut(data, []byte("\n"))
		var line struct {
			State struct {
				Usage coord.Usage `json:"usage"`
			} `json:"state"`
		}
		if err := json.Unmarshal(first, &line); err != nil {
			problems = append(problems, fmt.Sprintf("%s: unreadable, its usage is not counted: %v", key, err))
			continue
		}
		total = total.Add(line.State.Usage)
	}
	return total, problems
}

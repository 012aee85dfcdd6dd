package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/conclave-ai/conclave/engine/config"
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
	var skipVoting bool
	status := &cobra.Command{
		Use:   "status --session-dir DIR",
		Short: "Print the coordination state of a step-mode session as JSON",
		Long: "Prints phase, per-agent state, stale votes, the relaunch set, consensus and the\n" +
			"winner, by the rules that end a Coordination workflow (rule majority, a split\n" +
			"settled by plurality; decomposition when session.json says so; with --skip-voting\n" +
			"done once every agent has an answer). External orchestrators call this to decide\n" +
			"which agents to launch next. Unreadable files are listed on stderr.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openSessionDir(cmd.Context(), dir)
			if errors.Is(err, errNoSessionDir) && len(agents) > 0 {
				// A new session: the first `conclave step` creates it.
				// Naming the team says it is expected, so its agents show
				// as no_action and the documented loop starts them.
				st, err = emptyStore{location: dir}, nil
			}
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
			out := stepModeStatus(snap, skipVoting)
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
	status.Flags().StringSliceVar(&agents, "agents", nil, "agent ids of the team; those without files yet show as no_action, and a missing local session directory is a session not started yet")
	status.Flags().BoolVar(&skipVoting, "skip-voting", false, "no vote round (MassGen's skip_voting, or the quick synthesize path): done once every agent has an answer, only agents without one are relaunched, and the first agent presents")
	_ = status.MarkFlagRequired("session-dir")
	cmd.AddCommand(status)
	return cmd
}

// stepModeStatus judges a stored session by the rules that end a
// Coordination workflow (coord.Judge), under step mode's settings: rule
// majority; a full split is settled by plurality at once, since step mode
// keeps no re-vote count; decomposition when session.json says so. When no
// agent needs a step and nothing is decided, the session has stalled and
// is decided the way the workflow decides a stall, so an orchestrator loop
// that waits for consensus always ends. skipVoting is a session without a
// vote round (coord.VerdictOptions.SkipVoting).
func stepModeStatus(snap *session.Snapshot, skipVoting bool) coord.Status {
	l := snap.Ledger()
	o := coord.VerdictOptions{Rule: coord.RuleMajority, SkipVoting: skipVoting}
	if snap.Info != nil && snap.Info.Mode == string(config.ModeDecomposition) {
		o.Decomposition = true
	}
	v := coord.Judge(l, o, 0)
	if !v.Done && len(l.Agents) > 0 && len(coord.RelaunchFor(l, o)) == 0 {
		v = coord.Stalled(l, o, snap.AnswerOrder())
	}
	phase := coord.PhaseCoordinating
	switch {
	case v.Decided():
		phase = coord.PhaseDone
	case v.Done:
		phase = coord.PhaseFailed
	}
	s := coord.Summarize(l, v, phase)
	if phase == coord.PhaseCoordinating {
		s.Relaunch = coord.RelaunchFor(l, o)
	}
	return s
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
			return nil, fmt.Errorf("session directory %s %w (check --session-dir, or pass --agents for a session not started yet)", path, errNoSessionDir)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("session directory %s is a file, not a directory", path)
		}
	}
	return storage.Open(ctx, dir)
}

// errNoSessionDir says a local session directory does not exist.
var errNoSessionDir = errors.New("does not exist")

// emptyStore is a session directory that does not exist yet: it holds
// nothing and is never written (status only reads).
type emptyStore struct{ location string }

func (emptyStore) Put(context.Context, string, []byte) error {
	return errors.New("the session directory does not exist")
}
func (e emptyStore) Create(ctx context.Context, key string, data []byte) error {
	return e.Put(ctx, key, data)
}
func (emptyStore) Get(_ context.Context, key string) ([]byte, error) {
	return nil, fmt.Errorf("%s: %w", key, storage.ErrNotFound)
}
func (emptyStore) List(context.Context, string) ([]string, error) { return nil, nil }
func (emptyStore) Delete(context.Context, string) error           { return nil }
func (e emptyStore) Location() string                             { return e.location }

// storedUsage sums the usage recorded in the steps' transcripts (the first
// line of each trace.jsonl holds the step's usage, cost included) of the
// given agents, and of the final presentation.
func storedUsage(ctx context.Context, st storage.Store, agents map[string]coord.AgentStatus) (coord.Usage, []string) {
	var total coord.Usage
	var problems []string
	var keys []string
	for _, id := range slices.Sorted(maps.Keys(agents)) {
		listed, err := st.List(ctx, session.AgentPrefix(id))
		if err != nil {
			problems = append(problems, fmt.Sprintf("list the steps of %s: %v", id, err))
			continue
		}
		keys = append(keys, listed...)
	}
	keys = append(keys, session.FinalTraceKey)
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

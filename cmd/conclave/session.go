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

	"github.com/conclave-ai/conclave/contract"
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
	var cfgPath string
	var skipVoting bool
	status := &cobra.Command{
		Use:   "status --session-dir DIR",
		Short: "Print the coordination state of a step-mode session as JSON",
		Long: "Prints phase, per-agent state (running steps included), stale votes, the relaunch\n" +
			"set, a re-vote under way, consensus and the winner, by the rules that end a\n" +
			"Coordination workflow: the consensus rule, max_revote_rounds and presenter of\n" +
			"--config's orchestrator section (defaults without it), decomposition when\n" +
			"session.json or --config says so. External orchestrators call this to decide\n" +
			"which agents to launch next, until phase is no longer \"coordinating\".\n" +
			"Unreadable files are listed on stderr.",
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
			if err := sameTeam(agents, snap.Info); err != nil {
				return err
			}
			snap.KeepTeam()
			if err := snap.Include(agents); err != nil {
				return fmt.Errorf("--agents: %w", err)
			}
			for _, p := range snap.Problems {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", p)
			}
			rules, err := sessionRules(cmd.Context(), st, cfgPath, snap.Info)
			if err != nil {
				return err
			}
			rules.Verdict.SkipVoting = rules.Verdict.SkipVoting || skipVoting
			out := snap.Replay(rules, true).Advise()
			if ended, err := endedSession(cmd.Context(), st, snap, rules.Verdict.Decomposition); err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
			} else if ended != nil {
				// The workflow ended it (a timeout, a cancel, its own
				// verdict): that is the outcome, and nothing is relaunched.
				fmt.Fprintf(cmd.ErrOrStderr(), "note: the workflow that ran this session ended it (%s, %s); this is its outcome\n", session.StatusKey, ended.Phase)
				out.Phase, out.Winner, out.Consensus, out.DecidedBy = ended.Phase, ended.Winner, ended.Consensus, ended.DecidedBy
				out.Relaunch, out.Revote = []string{}, nil
				// Only the workflow knows whom it dropped (and why): the
				// stored files hold no record of it.
				for id, as := range ended.Agents {
					if cur, ok := out.Agents[id]; ok && as.State == coord.StateFailed {
						cur.State, cur.FailReason, cur.GivenUpStep = coord.StateFailed, terminalLine(contract.Preview(as.FailReason)), as.GivenUpStep
						out.Agents[id] = cur
					}
				}
			}
			usage, problems := storedUsage(cmd.Context(), st, out.Agents)
			out.Usage = usage
			for _, p := range problems {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", p)
			}
			enc := json.NewEncoder(jsonOut{cmd.OutOrStdout()})
			enc.SetIndent("", "  ")
			return enc.Encode(out)
		},
	}
	status.Flags().StringVar(&dir, "session-dir", "", "session directory, file:// or s3:// URL (required)")
	status.Flags().StringSliceVar(&agents, "agents", nil, "agent ids of the team; those without files yet show as no_action, and a missing local session directory is a session not started yet")
	status.Flags().BoolVar(&skipVoting, "skip-voting", false, "no vote round (MassGen's skip_voting, or the quick synthesize path): done once every agent has an answer, only agents without one are relaunched, and the first agent presents; also set by --config's skip_voting")
	status.Flags().StringVar(&cfgPath, "config", "", "an agent config of the session: its orchestrator section sets the rules it is judged by (default: the config a workflow stored in the session, else the defaults)")
	_ = status.MarkFlagRequired("session-dir")
	cmd.AddCommand(status)
	return cmd
}

// sessionRules are the rules `session status` and `conclave step` judge
// a stored session by, replaying its steps through the state machine as
// the workflow ran them (session.Snapshot.Replay, coord.Machine.Advise):
// the --config's orchestrator section (defaults for what it leaves out),
// else the config a workflow stored in the session (config.json), else the
// defaults; session.json's mode, when it records one, decides
// decomposition, and a --config that says otherwise is refused.
func sessionRules(ctx context.Context, st storage.Store, cfgPath string, info *session.Info) (coord.Rules, error) {
	orch := config.DefaultOrchestrator()
	if cfgPath == "" {
		var stored config.Config
		if err := session.ReadJSON(ctx, st, session.ConfigKey, &stored); err == nil {
			orch = stored.Orchestrator
		}
		return modeRules(orch, info), nil
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return coord.Rules{}, err
	}
	orch = cfg.Orchestrator
	if info != nil && info.Mode != "" && info.Mode != string(orch.CoordinationMode) {
		return coord.Rules{}, fmt.Errorf("--config %s has coordination_mode %q but the session's session.json records mode %q: "+
			"pass the config the session was started with", cfgPath, orch.CoordinationMode, info.Mode)
	}
	return modeRules(orch, info), nil
}

// modeRules are orch's rules in the mode session.json records, if any.
func modeRules(orch config.Orchestrator, info *session.Info) coord.Rules {
	if info != nil && info.Mode != "" {
		orch.CoordinationMode = config.CoordinationMode(info.Mode)
	}
	return orch.Rules()
}

// sameTeam refuses --agents that disagree with the team session.json
// records, as `conclave step` does: the two must judge the same team.
func sameTeam(given []string, info *session.Info) error {
	if len(given) == 0 || info == nil || len(info.Agents) == 0 {
		return nil
	}
	a, b := slices.Sorted(slices.Values(given)), slices.Sorted(slices.Values(info.Agents))
	if !slices.Equal(slices.Compact(a), slices.Compact(b)) {
		return fmt.Errorf("--agents %s disagrees with the team in %s (%s); pass the session's team or none",
			strings.Join(given, ","), session.InfoKey, strings.Join(info.Agents, ","))
	}
	return nil
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

// endedSession is the final status a Coordination workflow stored in
// status.json once it ended the session — done, failed, cancelled or
// timeout — or nil: a step-mode session has none, and a running one is
// still coordinating. Only the workflow knows a timeout or a cancel, so
// without it `session status` would relaunch agents of a session that is
// over. It is believed only of a session a workflow owns (owner.json) and
// only when it is consistent with the stored files: a winner of the team
// with a stored answer (none for failed or cancelled; a decomposition
// presenter need not have one), a known decided_by.
// Anything else is refused with an error naming what does not match, and
// the stored files are judged as in step mode.
func endedSession(ctx context.Context, st storage.Store, snap *session.Snapshot, decomposition bool) (*coord.Status, error) {
	var s coord.Status
	err := session.ReadJSON(ctx, st, session.StatusKey, &s)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s is unreadable, so a session the workflow ended may look unfinished: %w", session.StatusKey, err)
	}
	switch s.Phase {
	case coord.PhaseDone, coord.PhaseFailed, coord.PhaseCancelled, coord.PhaseTimeout:
	default:
		return nil, nil
	}
	ignored := func(why string) error {
		return fmt.Errorf("%s says the session ended (%q) but is ignored: %s", session.StatusKey, s.Phase, why)
	}
	if owner, err := session.ReadOwner(ctx, st); err != nil || owner.WorkflowID == "" || owner.FirstRunID == "" {
		return nil, ignored("no Coordination workflow owns this session (" + session.OwnerKey + " with its workflow and run ids)")
	}
	if s.DecidedBy != "" && s.DecidedBy != coord.StatusConsensus && s.DecidedBy != coord.StatusPlurality {
		return nil, ignored(fmt.Sprintf("decided_by %q is neither %q nor %q", terminalLine(s.DecidedBy), coord.StatusConsensus, coord.StatusPlurality))
	}
	switch {
	case s.Winner == "" && (s.Phase == coord.PhaseDone || s.Phase == coord.PhaseTimeout):
		return nil, ignored("it names no winner")
	case s.Winner != "":
		a, ok := snap.Agent(s.Winner)
		if !ok {
			return nil, ignored(fmt.Sprintf("its winner %q is not an agent of the session", terminalLine(contract.Preview(s.Winner))))
		}
		if a.Latest() == nil && !decomposition {
			// A decomposition presenter assembles the others' parts and
			// need not have a part of its own.
			return nil, ignored(fmt.Sprintf("its winner %s has no stored answer", s.Winner))
		}
	}
	return &s, nil
}

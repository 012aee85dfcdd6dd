package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/storage"
)

// StepOutput is what one agent step produced, ready to be stored.
type StepOutput struct {
	Agent string
	// Step is the agent's step number. Zero means "the next one" (step
	// mode): after the agent's latest action and every number given up
	// (coord.NextStep). Temporal passes the number the workflow assigned, so
	// a retried activity rewrites the same keys; a fenced launch never gets
	// here (Commit).
	Step   int
	Action coord.Action
	// Answer is the new_answer content.
	Answer string
	// WorkspaceDir is the agent's local working directory; with an answer
	// its files are copied to <step>/workspace/ and mentions of its path in
	// the answer are rewritten to the stored location.
	WorkspaceDir string
	Target       string // vote target (a real agent id)
	Reason       string // vote reason
	Summary      string // stop summary
	StopStatus   string // stop status: complete or blocked
	SeenSteps    map[string]int
	Duration     time.Duration
	Cost         map[string]any
	Now          time.Time
	// Fresh says no earlier attempt of this step got as far as saving (it
	// found no checkpoint of the step: every save follows one), so there
	// are no leftovers to clear first.
	Fresh bool
}

// Saved tells where a step went.
type Saved struct {
	Step int `json:"step"`
	// Key is the action file (answer.json, vote.json or stop.json).
	Key string `json:"key"`
	// Workspace is the stored workspace location (empty without files).
	Workspace string `json:"workspace,omitempty"`
	// Answer is the stored answer text, paths rewritten.
	Answer string `json:"answer,omitempty"`
}

// Save stores one step: the workspace first, then the action file (which is
// what makes the step count) together with last_action.json. A crash before
// the action file leaves a folder that Load ignores and the next Save reuses.
func Save(ctx context.Context, st storage.Store, out StepOutput) (Saved, error) {
	if err := CheckAgentID(out.Agent); err != nil {
		return Saved{}, err
	}
	if out.Now.IsZero() {
		return Saved{}, fmt.Errorf("save step of %s: no timestamp given", out.Agent)
	}
	switch out.Action {
	case coord.ActionNewAnswer:
	case coord.ActionVote:
		if out.Target == "" {
			return Saved{}, fmt.Errorf("save vote of %s: no target", out.Agent)
		}
		if err := CheckAgentID(out.Target); err != nil {
			return Saved{}, fmt.Errorf("save vote of %s: %w", out.Agent, err)
		}
	case coord.ActionStop:
		if out.StopStatus != "complete" && out.StopStatus != "blocked" {
			return Saved{}, fmt.Errorf("save stop of %s: status %q must be complete or blocked", out.Agent, out.StopStatus)
		}
	default:
		return Saved{}, fmt.Errorf("save step of %s: unknown action %q", out.Agent, out.Action)
	}
	step := out.Step
	if step < 0 {
		return Saved{}, fmt.Errorf("save step of %s: step %d is negative", out.Agent, step)
	}
	if step == 0 {
		snap, err := Load(ctx, st)
		if err != nil {
			return Saved{}, err
		}
		step = 1
		if a, ok := snap.Agent(out.Agent); ok {
			step = coord.NextStep(a.Agent)
		}
	}
	// Leftovers of an unfinished attempt at this step must not mix with the
	// new workspace.
	if !out.Fresh {
		if err := DeletePrefix(ctx, st, WorkspacePrefix(out.Agent, step)); err != nil {
			return Saved{}, err
		}
	}

	ts := Timestamp(out.Now)
	saved := Saved{Step: step}
	last := LastAction{
		AgentID: out.Agent, Action: string(out.Action), Timestamp: ts, StepNumber: step,
		DurationSeconds: out.Duration.Seconds(), Cost: out.Cost,
	}
	if last.Cost == nil {
		last.Cost = map[string]any{}
	}
	var file any
	switch out.Action {
	case coord.ActionNewAnswer:
		text := out.Answer
		if out.WorkspaceDir != "" {
			prefix := WorkspacePrefix(out.Agent, step)
			if err := storage.PutDir(ctx, st, prefix, out.WorkspaceDir); err != nil {
				return Saved{}, fmt.Errorf("store the workspace of %s step %d: %w", out.Agent, step, err)
			}
			saved.Workspace = st.Location() + "/" + strings.TrimSuffix(prefix, "/")
			text = rewritePath(text, out.WorkspaceDir, saved.Workspace)
			last.WorkspacePath = &saved.Workspace
		}
		saved.Key, saved.Answer = AnswerKey(out.Agent, step), text
		last.AnswerText = &text
		file = AnswerFile{AgentID: out.Agent, Answer: text, SeenSteps: nonNil(out.SeenSteps), Timestamp: ts}
	case coord.ActionVote:
		saved.Key = VoteKey(out.Agent, step)
		last.VoteTarget, last.VoteReason = &out.Target, &out.Reason
		file = VoteFile{Voter: out.Agent, Target: out.Target, Reason: out.Reason, SeenSteps: nonNil(out.SeenSteps), Timestamp: ts}
	case coord.ActionStop:
		saved.Key = StopKey(out.Agent, step)
		file = StopFile{AgentID: out.Agent, Summary: out.Summary, Status: out.StopStatus, SeenSteps: nonNil(out.SeenSteps), Timestamp: ts}
	}
	// last_action.json is a report that Load never reads, so it is written
	// alongside the action file: a failure of either fails the save, and
	// the retried step rewrites both.
	lastErr := make(chan error, 1)
	go func() { lastErr <- WriteJSON(ctx, st, LastActionKey(out.Agent), last) }()
	err := WriteJSON(ctx, st, saved.Key, file)
	if err2 := <-lastErr; err == nil {
		err = err2
	}
	if err != nil {
		return Saved{}, err
	}
	return saved, nil
}

// rewritePath replaces the temporary workspace path in an answer with the
// stored one, so deliverables stay findable after the temp dir is gone.
func rewritePath(text, tmp, stored string) string {
	tmp = strings.TrimSuffix(tmp, "/")
	if tmp == "" || tmp == "." {
		return text
	}
	return strings.ReplaceAll(text, tmp, stored)
}

func nonNil(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

// DeletePrefix removes every key under prefix, so a rewritten folder (a
// retried step's workspace, final/workspace/) never keeps stale files.
func DeletePrefix(ctx context.Context, st storage.Store, prefix string) error {
	keys, err := st.List(ctx, prefix)
	if err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	for _, k := range keys {
		if err := st.Delete(ctx, k); err != nil {
			return fmt.Errorf("delete %s: %w", k, err)
		}
	}
	return nil
}

// WriteJSON stores v as indented JSON under key; session files are read by
// people as often as by programs.
func WriteJSON(ctx context.Context, st storage.Store, key string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	if err := st.Put(ctx, key, append(data, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

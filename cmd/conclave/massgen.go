package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/runes"
	"github.com/conclave-ai/conclave/workflows"
)

// massgenAlias makes `conclave --config x.yaml "question"` run a session, as
// `massgen --config x.yaml "question"` does: arguments that start with a
// flag and name a config are `run`'s.
func massgenAlias(args []string) []string {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return args
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--config" || strings.HasPrefix(a, "--config=") {
			return append([]string{"run"}, args...)
		}
	}
	return args
}

// checkConfig reports the config's warnings before a session starts; with
// strict, a warning stops it. Notes (display settings and the like) are
// shown by `conclave validate` only.
func checkConfig(path string, strict, automation bool, stderr io.Writer) error {
	_, warnings, err := config.LoadWithWarnings(path)
	if err != nil {
		return err
	}
	var serious []string
	for _, w := range warnings {
		if !w.Note {
			serious = append(serious, w.String())
		}
	}
	if strict && len(serious) > 0 {
		return fmt.Errorf("--strict: the config has settings Conclave would ignore:\n%s", strings.Join(serious, "\n"))
	}
	for _, s := range serious {
		if automation {
			fmt.Fprintln(stderr, "WARNING", s)
		} else {
			fmt.Fprintln(stderr, s)
		}
	}
	return nil
}

// Exit codes of --automation, MassGen's (massgen/cli.py), so scripts
// written for `massgen --automation` read them unchanged.
const (
	exitExecution   = 2 // the session failed or was cancelled
	exitTimeout     = 3 // orchestrator_timeout_seconds ran out (the answer is still printed)
	exitInterrupted = 4 // stopped following (Ctrl+C); the session goes on
)

// followAutomation is `run --automation`, MassGen's quiet mode: the lines
// MassGen prints (QUESTION, WINNER, ANSWER_FILE, DURATION, ANSWER_PREVIEW,
// COMPLETED) with Conclave's SESSION and WEB_UI, one PROGRESS line (the
// status as compact JSON) per change, a RESULT line, and last the final
// status.json after a STATUS_JSON: line. Exit codes are MassGen's.
func followAutomation(ctx context.Context, c client.Client, f *runFlags, in workflows.CoordinationInput, out io.Writer) error {
	start := time.Now()
	run, id, err := startSession(ctx, c, f, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "SESSION: %s\nWEB_UI: %s\nQUESTION: %s\n", id, f.link(id), oneLine(in.Task, 200))
	fmt.Fprintf(out, "[Coordination in progress - `conclave status %s` prints the live status.json]\n", id)
	done, res := await(ctx, run)
	tick := time.NewTicker(f.poll)
	defer tick.Stop()
	last := ""
	progress := func() (coord.Status, bool) {
		s, err := queryStatus(ctx, c, id)
		if err != nil {
			return s, false
		}
		if line := compactJSON(s); line != last {
			fmt.Fprintln(out, "PROGRESS", line)
			last = line
		}
		return s, true
	}
	for {
		select {
		case err := <-done:
			s, ok := progress()
			duration := time.Since(start).Seconds()
			if err != nil {
				fmt.Fprintln(out, "RESULT", compactJSON(map[string]string{"status": coord.StatusFailed, "session": id, "error": err.Error()}))
				return &exitError{code: exitExecution, err: &detailedError{msg: sessionFailed(id, err), err: err}}
			}
			fmt.Fprintf(out, "\nWINNER: %s\nANSWER_FILE: %s/final/answer.md\nDURATION: %.1fs\nANSWER_PREVIEW: %s\n",
				res.Winner, strings.TrimRight(res.Session, "/"), duration, oneLine(res.FinalAnswer, 200))
			fmt.Fprintln(out, "RESULT", compactJSON(struct {
				Status    string         `json:"status"`
				Winner    string         `json:"winner"`
				Session   string         `json:"session"`
				Votes     map[string]int `json:"votes"`
				Usage     coord.Usage    `json:"usage"`
				Truncated bool           `json:"truncated,omitempty"`
			}{res.Status, res.Winner, res.Session, res.Votes, res.Usage, res.Truncated}))
			fmt.Fprintf(out, "COMPLETED: %d agents, %.1fs total\n", len(in.Config.Agents), duration)
			fmt.Fprintln(out, "STATUS_JSON:")
			var final any = s
			if !ok {
				final = *res // the worker no longer answers queries; the result is the record
			}
			data, _ := json.MarshalIndent(final, "", "  ")
			fmt.Fprintln(out, string(safeJSON(data)))
			switch res.Status {
			case coord.StatusTimeout:
				return &exitError{code: exitTimeout, err: fmt.Errorf("session %s timed out; the answer above is the timeout winner's", id)}
			case coord.StatusFailed, coord.StatusCancelled:
				return &exitError{code: exitExecution, err: fmt.Errorf("session %s ended %s", id, res.Status)}
			}
			return nil
		case <-tick.C:
			progress()
		case <-ctx.Done():
			return &exitError{code: exitInterrupted, err: fmt.Errorf("stopped following %s (the session goes on; `conclave cancel %s` stops it)", id, id)}
		}
	}
}

// oneLine shortens s to n bytes on one line, for MassGen's previews.
func oneLine(s string, n int) string {
	s = terminalLine(s)
	if cut, ok := runes.Truncate(s, n); ok {
		return cut + "..." // MassGen's own mark
	}
	return s
}

// await waits for the session's result in the background: the channel
// delivers run.Get's error, after which the result is filled in.
func await(ctx context.Context, run client.WorkflowRun) (<-chan error, *workflows.CoordinationResult) {
	done := make(chan error, 1)
	res := new(workflows.CoordinationResult)
	go func() { done <- run.Get(ctx, res) }()
	return done, res
}

func compactJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(safeJSON(data))
}

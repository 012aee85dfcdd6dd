package main

import (
	"errors"
	"strings"

	"github.com/conclave-ai/conclave/engine/runes"
	"go.temporal.io/sdk/temporal"
	grpcstatus "google.golang.org/grpc/status"
)

// maxErrorLen bounds the one line a failed command prints without
// --verbose: one cause, said once.
const maxErrorLen = 300

// detailedError is a short, actionable message in front of the full
// error chain, which --verbose prints.
type detailedError struct {
	msg string
	err error
}

func (e *detailedError) Error() string { return e.msg }
func (e *detailedError) Unwrap() error { return e.err }

// briefCause reduces an error chain to one cause: the message of the
// outermost Temporal application error (Conclave's own words: the
// workflow's, else the step's) or of the gRPC status when there is one,
// without the wrappers (workflow, activity ids) and their repetitions.
func briefCause(err error) string {
	if err == nil {
		return ""
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Message() != "" {
		return dedupe(app.Message())
	}
	if s, ok := grpcstatus.FromError(err); ok && s.Message() != "" {
		return dedupe(s.Message())
	}
	return dedupe(err.Error())
}

// dedupe drops the parts of a "a: b: c" chain that repeat an earlier part,
// and shortens what is left to maxErrorLen.
func dedupe(msg string) string {
	parts := strings.Split(msg, ": ")
	var kept []string
	seen := ""
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" || strings.Contains(seen, p) {
			continue
		}
		kept = append(kept, p)
		seen += "\x00" + p
	}
	return runes.Clip(strings.Join(kept, ": "), maxErrorLen)
}

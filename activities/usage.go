package activities

import (
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/engine/coord"
)

// withUsage attaches what a failed activity had already spent to its error
// (as the error's details), so the workflow can count the tokens of a
// presentation that failed and fell back: they were paid for all the same.
// The error keeps its type, retryability and retry delay.
func withUsage(err error, u coord.Usage) error {
	if err == nil || u == (coord.Usage{}) {
		return err
	}
	opts := temporal.ApplicationErrorOptions{Details: []any{coord.Usage(u)}, Cause: err}
	typ := "Error"
	msg := err.Error()
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		typ, msg = ae.Type(), ae.Message()
		opts.NonRetryable, opts.NextRetryDelay, opts.Cause = ae.NonRetryable(), ae.NextRetryDelay(), ae.Unwrap()
	}
	return temporal.NewApplicationErrorWithOptions(msg, typ, opts)
}

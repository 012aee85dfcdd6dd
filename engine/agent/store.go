package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/conclave-ai/conclave/engine/llm"
)

// DefaultTraceBytes bounds a step's stored transcript (trace.jsonl) when
// the caller gives no limit: thirty turns of replies and results at their
// limits, with room to spare.
const DefaultTraceBytes = 64 << 20

// ErrTraceLimit marks a step stopped because its transcript went over the
// trace limit; the error is a non-retryable *llm.Error (the model's output
// is what grew it).
var ErrTraceLimit = errors.New("the step's transcript went over the trace limit")

// Store is where checkpoints are written; a storage.Store is one. Reading
// one back is the caller's, which decides what a damaged one means.
type Store interface {
	Put(ctx context.Context, key string, data []byte) error
}

// Checkpointer stores a transcript under key after every turn, then tells
// notify (a heartbeat) how many turns are safe: notified only once stored,
// so a progress report never runs ahead of what a retry can resume. A
// transcript over maxBytes (0: DefaultTraceBytes) is not stored and ends
// the step with an error wrapping ErrTraceLimit.
func Checkpointer[S any](st Store, key string, maxBytes int64, notify func(turns int)) func(context.Context, *Transcript[S]) error {
	if maxBytes <= 0 {
		maxBytes = DefaultTraceBytes
	}
	return func(ctx context.Context, t *Transcript[S]) error {
		data, err := t.MarshalJSONL()
		if err != nil {
			return err
		}
		if int64(len(data)) > maxBytes {
			return &llm.Error{Err: ErrTraceLimit, Cause: fmt.Sprintf(
				"the step's transcript reached %d bytes after %d model turns, over the %d-byte trace limit: the step ends here "+
					"(the worker's operator sets this limit, see docs/operations.md#limits)", len(data), t.Turns, maxBytes)}
		}
		if err := st.Put(ctx, key, data); err != nil {
			return err
		}
		if notify != nil {
			notify(t.Turns)
		}
		return nil
	}
}

package agent

import "context"

// Store is where checkpoints are written; a storage.Store is one. Reading
// one back is the caller's, which decides what a damaged one means.
type Store interface {
	Put(ctx context.Context, key string, data []byte) error
}

// Checkpointer stores a transcript under key after every turn, then tells
// notify (a heartbeat) how many turns are safe: notified only once stored,
// so a progress report never runs ahead of what a retry can resume.
func Checkpointer[S any](st Store, key string, notify func(turns int)) func(context.Context, *Transcript[S]) error {
	return func(ctx context.Context, t *Transcript[S]) error {
		data, err := t.MarshalJSONL()
		if err != nil {
			return err
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

// Package storage keeps a session's files (answers, votes, workspaces, traces)
// behind one small interface so that the same code runs against a local
// directory on a laptop and an S3-compatible bucket in production.
package storage

import (
	"context"
	"errors"
)

// ErrNotFound is wrapped by Get when a key does not exist, so callers can tell
// "nothing stored yet" from a storage failure with errors.Is.
var ErrNotFound = errors.New("storage: key not found")

// ErrExists is wrapped by Create when the key already holds a value, so the
// caller can read who got there first.
var ErrExists = errors.New("storage: key already exists")

// Store is the whole surface Conclave needs from object storage. Keys are
// slash-separated paths relative to the store's root (a directory or a bucket
// prefix); every implementation refuses keys that could escape that root.
type Store interface {
	// Put writes data under key, replacing any previous value. Readers never
	// observe a partially written value.
	Put(ctx context.Context, key string, data []byte) error
	// Create writes data under key only if nothing is stored there yet,
	// atomically: of concurrent Creates of one key exactly one succeeds and
	// the others return an error wrapping ErrExists, so a session can have
	// one owner. Readers never observe a partially written value.
	Create(ctx context.Context, key string, data []byte) error
	// Get returns the value under key, or an error wrapping ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns every key that starts with prefix, sorted. A prefix that
	// names a "directory" should end in "/"; the empty prefix lists everything.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Location names the root for people: a directory path or an s3:// URL.
	Location() string
}

package storage

import (
	"context"
	"fmt"
	"strings"
)

// Sub returns the part of s under prefix as a Store of its own, so code that
// handles one session sees "session.json" rather than "<id>/session.json"
// and cannot reach a sibling session. prefix may be given with or without a
// trailing "/"; an empty prefix returns s. An invalid prefix (say, a session
// id containing "..") yields a store whose every call fails with the
// validation error, so a bad id from user input cannot panic a worker.
func Sub(s Store, prefix string) Store {
	p, err := dirPrefix(prefix)
	if err == nil && p == "" {
		return s
	}
	if inner, ok := s.(*sub); ok && err == nil && inner.err == nil {
		return &sub{parent: inner.parent, prefix: inner.prefix + p, loc: inner.loc + "/" + strings.TrimSuffix(p, "/")}
	}
	if err != nil {
		err = fmt.Errorf("storage: sub-store of %s: %w", s.Location(), err)
	}
	return &sub{parent: s, prefix: p, loc: s.Location() + "/" + strings.TrimSuffix(p, "/"), err: err}
}

type sub struct {
	parent Store
	prefix string // ends with "/"
	loc    string
	err    error
}

func (s *sub) Location() string { return s.loc }

func (s *sub) Put(ctx context.Context, key string, data []byte) error {
	if s.err != nil {
		return s.err
	}
	if err := ValidKey(key); err != nil {
		return err
	}
	return s.parent.Put(ctx, s.prefix+key, data)
}

func (s *sub) Create(ctx context.Context, key string, data []byte) error {
	if s.err != nil {
		return s.err
	}
	if err := ValidKey(key); err != nil {
		return err
	}
	return s.parent.Create(ctx, s.prefix+key, data)
}

func (s *sub) Get(ctx context.Context, key string) ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	return s.parent.Get(ctx, s.prefix+key)
}

func (s *sub) List(ctx context.Context, prefix string) ([]string, error) {
	if s.err != nil {
		return nil, s.err
	}
	if err := validPrefix(prefix); err != nil {
		return nil, err
	}
	keys, err := s.parent.List(ctx, s.prefix+prefix)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		keys[i] = strings.TrimPrefix(k, s.prefix)
	}
	return keys, nil
}

func (s *sub) Delete(ctx context.Context, key string) error {
	if s.err != nil {
		return s.err
	}
	if err := ValidKey(key); err != nil {
		return err
	}
	return s.parent.Delete(ctx, s.prefix+key)
}

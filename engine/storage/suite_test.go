package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/storage"
)

// refusedKeys are keys every Store must refuse before touching anything.
var refusedKeys = []struct{ name, key string }{
	{"absolute", "/abs"},
	{"dotdot first", "../x"},
	{"dotdot middle", "a/../b"},
	{"backslash", "a\\b"},
	{"nul", "a\x00b"},
	{"newline", "a\nb"},
	{"del", "a\x7fb"},
	{"empty", ""},
	{"empty element", "a//b"},
	{"dot first", "./a"},
	{"trailing slash", "a/"},
}

// runStoreSuite checks the behaviour every Store promises. open must return
// a fresh, empty store for each call.
func runStoreSuite(t *testing.T, open func(t *testing.T) storage.Store) {
	ctx := context.Background()

	t.Run("round trip and overwrite", func(t *testing.T) {
		s := open(t)
		require.NoError(t, s.Put(ctx, "agents/a/001/answer.json", []byte(`{"answer":"one"}`)))
		got, err := s.Get(ctx, "agents/a/001/answer.json")
		require.NoError(t, err)
		assert.Equal(t, `{"answer":"one"}`, string(got))

		require.NoError(t, s.Put(ctx, "agents/a/001/answer.json", []byte("two")))
		got, err = s.Get(ctx, "agents/a/001/answer.json")
		require.NoError(t, err)
		assert.Equal(t, "two", string(got))
	})

	t.Run("binary and empty values", func(t *testing.T) {
		s := open(t)
		bin := make([]byte, 0, 512)
		for i := range 512 {
			bin = append(bin, byte(i*7))
		}
		require.NoError(t, s.Put(ctx, "bin", bin))
		require.NoError(t, s.Put(ctx, "empty", nil))
		got, err := s.Get(ctx, "bin")
		require.NoError(t, err)
		assert.True(t, bytes.Equal(bin, got), "binary value changed in transit")
		got, err = s.Get(ctx, "empty")
		require.NoError(t, err)
		assert.Empty(t, got)
	})

	t.Run("missing key is ErrNotFound", func(t *testing.T) {
		s := open(t)
		_, err := s.Get(ctx, "nope.json")
		assert.ErrorIs(t, err, storage.ErrNotFound)
		require.NoError(t, s.Put(ctx, "dir/file", []byte("x")))
		_, err = s.Get(ctx, "dir")
		assert.ErrorIs(t, err, storage.ErrNotFound, "a directory is not a key")
		_, err = s.Get(ctx, "dir/file/deeper")
		assert.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("list", func(t *testing.T) {
		s := open(t)
		for _, k := range []string{"a/bc/1", "a/b/2", "a/b/1", "a/b/c/3", "a/b-x", "z", "a/b.txt"} {
			require.NoError(t, s.Put(ctx, k, []byte(k)))
		}
		keys, err := s.List(ctx, "a/b/")
		require.NoError(t, err)
		assert.Equal(t, []string{"a/b/1", "a/b/2", "a/b/c/3"}, keys, "sibling prefixes a/bc/ and a/b-x must not match")

		all, err := s.List(ctx, "")
		require.NoError(t, err)
		assert.True(t, slices.IsSorted(all), "not sorted: %q", all)
		assert.Len(t, all, 7)

		none, err := s.List(ctx, "missing/")
		require.NoError(t, err)
		assert.Empty(t, none)

		_, err = s.List(ctx, "a/b")
		assert.Error(t, err, "a prefix must end in /")
	})

	t.Run("delete", func(t *testing.T) {
		s := open(t)
		require.NoError(t, s.Put(ctx, "x/y/z", []byte("1")))
		require.NoError(t, s.Put(ctx, "x/keep", []byte("2")))
		require.NoError(t, s.Delete(ctx, "x/y/z"))
		_, err := s.Get(ctx, "x/y/z")
		assert.ErrorIs(t, err, storage.ErrNotFound)
		require.NoError(t, s.Delete(ctx, "x/y/z"), "deleting a missing key is not an error")
		require.NoError(t, s.Delete(ctx, "never/was"))
		keys, err := s.List(ctx, "")
		require.NoError(t, err)
		assert.Equal(t, []string{"x/keep"}, keys)
	})

	t.Run("refused keys", func(t *testing.T) {
		s := open(t)
		for _, tc := range refusedKeys {
			t.Run(tc.name, func(t *testing.T) {
				assert.Error(t, s.Put(ctx, tc.key, []byte("x")), "Put")
				_, err := s.Get(ctx, tc.key)
				assert.Error(t, err, "Get")
				assert.NotErrorIs(t, err, storage.ErrNotFound, "Get must refuse, not look")
				assert.Error(t, s.Delete(ctx, tc.key), "Delete")
				if tc.key != "" {
					_, err = s.List(ctx, tc.key+"/")
					assert.Error(t, err, "List")
				}
			})
		}
		keys, err := s.List(ctx, "")
		require.NoError(t, err)
		assert.Empty(t, keys, "a refused Put wrote something")
		assert.Error(t, s.Put(ctx, string(bytes.Repeat([]byte("k"), storage.MaxKeyLen+1)), nil), "over-long key")
	})

	t.Run("sub store", func(t *testing.T) {
		s := open(t)
		sess := storage.Sub(s, "sess-1")
		assert.Equal(t, s.Location()+"/sess-1", sess.Location())
		require.NoError(t, sess.Put(ctx, "session.json", []byte("{}")))
		require.NoError(t, s.Put(ctx, "sess-10/session.json", []byte("other")))

		got, err := s.Get(ctx, "sess-1/session.json")
		require.NoError(t, err)
		assert.Equal(t, "{}", string(got))
		keys, err := sess.List(ctx, "")
		require.NoError(t, err)
		assert.Equal(t, []string{"session.json"}, keys, "a session must not see its siblings")

		nested := storage.Sub(sess, "agents/a/")
		assert.Equal(t, s.Location()+"/sess-1/agents/a", nested.Location())
		require.NoError(t, nested.Put(ctx, "001/answer.json", []byte("a")))
		_, err = s.Get(ctx, "sess-1/agents/a/001/answer.json")
		require.NoError(t, err)
		require.NoError(t, nested.Delete(ctx, "001/answer.json"))
		_, err = nested.Get(ctx, "001/answer.json")
		assert.ErrorIs(t, err, storage.ErrNotFound)

		assert.Error(t, sess.Put(ctx, "../escape", nil))
		bad := storage.Sub(s, "../up")
		assert.Error(t, bad.Put(ctx, "x", nil))
		_, err = bad.List(ctx, "")
		assert.Error(t, err)
		keys, err = s.List(ctx, "")
		require.NoError(t, err)
		assert.Equal(t, []string{"sess-1/session.json", "sess-10/session.json"}, keys)
	})

	t.Run("PutDir GetDir CopyPrefix", func(t *testing.T) {
		s := open(t)
		src := t.TempDir()
		files := map[string]string{
			"README.md":          "hello",
			"src/main.go":        "package main",
			"src/pkg/deep/x.txt": "deep",
			"empty":              "",
		}
		for rel, body := range files {
			p := filepath.Join(src, filepath.FromSlash(rel))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		}
		require.NoError(t, os.Mkdir(filepath.Join(src, "emptydir"), 0o755))
		require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(src, "link")))

		require.NoError(t, storage.PutDir(ctx, s, "agents/a/001/workspace/", src))
		keys, err := s.List(ctx, "agents/a/001/workspace/")
		require.NoError(t, err)
		assert.Equal(t, []string{
			"agents/a/001/workspace/README.md",
			"agents/a/001/workspace/empty",
			"agents/a/001/workspace/src/main.go",
			"agents/a/001/workspace/src/pkg/deep/x.txt",
		}, keys, "symlinks are skipped")

		require.NoError(t, storage.CopyPrefix(ctx, s, "agents/a/001/workspace/", "final/workspace/"))
		dst := filepath.Join(t.TempDir(), "out")
		require.NoError(t, storage.GetDir(ctx, s, "final/workspace/", dst))
		for rel, body := range files {
			got, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(rel)))
			require.NoError(t, err, rel)
			assert.Equal(t, body, string(got), rel)
		}
		_, err = os.Lstat(filepath.Join(dst, "link"))
		assert.ErrorIs(t, err, os.ErrNotExist)

		assert.Error(t, storage.PutDir(ctx, s, "x/", filepath.Join(src, "missing")))
		assert.Error(t, storage.PutDir(ctx, s, "no-slash", src))
		assert.Error(t, storage.GetDir(ctx, s, "../", dst))
		assert.Error(t, storage.CopyPrefix(ctx, s, "a/", "../b/"))
	})

	t.Run("create is exclusive", func(t *testing.T) {
		s := open(t)
		require.NoError(t, s.Create(ctx, "sess/session.json", []byte("first")))
		err := s.Create(ctx, "sess/session.json", []byte("second"))
		require.ErrorIs(t, err, storage.ErrExists)
		got, err := s.Get(ctx, "sess/session.json")
		require.NoError(t, err)
		assert.Equal(t, "first", string(got), "a refused Create changed the value")

		sub := storage.Sub(s, "other")
		require.NoError(t, sub.Put(ctx, "session.json", []byte("put")))
		require.ErrorIs(t, sub.Create(ctx, "session.json", []byte("x")), storage.ErrExists, "Create after Put")
		assert.Error(t, s.Create(ctx, "../escape", nil))

		// Of concurrent Creates of one key exactly one wins, and the
		// stored value is the winner's, whole.
		const n = 16
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = s.Create(ctx, "race/session.json", bytes.Repeat([]byte{byte('a' + i)}, 4096)) })
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "two Creates succeeded")
				winner = i
				continue
			}
			require.ErrorIs(t, err, storage.ErrExists)
		}
		require.NotEqual(t, -1, winner, "no Create succeeded")
		got, err = s.Get(ctx, "race/session.json")
		require.NoError(t, err)
		assert.Equal(t, bytes.Repeat([]byte{byte('a' + winner)}, 4096), got)
		keys, err := s.List(ctx, "race/")
		require.NoError(t, err)
		assert.Equal(t, []string{"race/session.json"}, keys, "no temporary file is left")
	})

	t.Run("concurrent puts", func(t *testing.T) {
		s := open(t)
		const n = 32
		key := func(i int, name string) string {
			return fmt.Sprintf("agents/agent%d/%03d/%s", i%4, i%3, name)
		}
		for i := range n {
			require.NoError(t, s.Put(ctx, key(i, fmt.Sprintf("old-%d", i)), nil))
		}
		// Puts race with Deletes that prune the same directories.
		var wg sync.WaitGroup
		errs := make([]error, 2*n)
		for i := range n {
			wg.Go(func() { errs[i] = s.Put(ctx, key(i, fmt.Sprintf("new-%d", i)), []byte{byte(i)}) })
			wg.Go(func() { errs[n+i] = s.Delete(ctx, key(i, fmt.Sprintf("old-%d", i))) })
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		keys, err := s.List(ctx, "agents/")
		require.NoError(t, err)
		require.Len(t, keys, n)
		for i := range n {
			got, err := s.Get(ctx, key(i, fmt.Sprintf("new-%d", i)))
			require.NoError(t, err)
			assert.Equal(t, []byte{byte(i)}, got)
		}
	})
}

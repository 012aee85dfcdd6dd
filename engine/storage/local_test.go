package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/storage"
)

func newLocal(t *testing.T) *storage.Local {
	t.Helper()
	s, err := storage.NewLocal(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	return s
}

func TestLocalSuite(t *testing.T) {
	runStoreSuite(t, func(t *testing.T) storage.Store { return newLocal(t) })
}

// walkNames lists every name under dir, for checking what Local left on disk.
func walkNames(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel != "." {
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	}))
	return names
}

func TestLocalPutLeavesNoTempFiles(t *testing.T) {
	ctx := context.Background()
	s := newLocal(t)
	for range 3 {
		require.NoError(t, s.Put(ctx, "a/b/c.json", []byte("v")))
	}
	assert.Equal(t, []string{"a", "a/b", "a/b/c.json"}, walkNames(t, s.Location()))
}

func TestLocalListSkipsTempFilesAndRefusesReservedNames(t *testing.T) {
	ctx := context.Background()
	s := newLocal(t)
	// What a crash between create and rename would leave behind.
	require.NoError(t, os.WriteFile(filepath.Join(s.Location(), ".tmp-0123"), []byte("partial"), 0o644))
	require.NoError(t, s.Put(ctx, "ok", []byte("v")))
	keys, err := s.List(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"ok"}, keys)
	assert.Error(t, s.Put(ctx, "dir/.tmp-x", nil), "temp-file names are reserved")
}

func TestLocalRefusesSymlinks(t *testing.T) {
	ctx := context.Background()
	s := newLocal(t)
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(s.Location(), "file-link")))
	require.NoError(t, os.Symlink(outside, filepath.Join(s.Location(), "dir-link")))
	require.NoError(t, s.Put(ctx, "real", []byte("r")))

	keys, err := s.List(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"real"}, keys, "symlinks are not listed or walked into")
	keys, err = s.List(ctx, "dir-link/")
	require.NoError(t, err)
	assert.Empty(t, keys)

	_, err = s.Get(ctx, "file-link")
	assert.Error(t, err)
	_, err = s.Get(ctx, "dir-link/secret")
	assert.Error(t, err)
	assert.NotErrorIs(t, err, storage.ErrNotFound)

	assert.Error(t, s.Put(ctx, "dir-link/planted", []byte("x")))
	_, err = os.Stat(filepath.Join(outside, "planted"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a Put escaped through a symlink")

	assert.Error(t, s.Delete(ctx, "dir-link/secret"))
	_, err = os.Stat(filepath.Join(outside, "secret"))
	assert.NoError(t, err, "a Delete escaped through a symlink")
}

func TestLocalDeletePrunesEmptyDirs(t *testing.T) {
	ctx := context.Background()
	s := newLocal(t)
	require.NoError(t, s.Put(ctx, "sess/agents/a/001/answer.json", nil))
	require.NoError(t, s.Put(ctx, "sess/session.json", nil))
	require.NoError(t, s.Delete(ctx, "sess/agents/a/001/answer.json"))
	assert.Equal(t, []string{"sess", "sess/session.json"}, walkNames(t, s.Location()))
	require.NoError(t, s.Delete(ctx, "sess/session.json"))
	assert.Empty(t, walkNames(t, s.Location()))
	_, err := os.Stat(s.Location())
	assert.NoError(t, err, "the root itself is never pruned")
}

func TestNewLocal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := storage.NewLocal(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, s.Location())
	assert.DirExists(t, dir)

	_, err = storage.NewLocal("")
	assert.Error(t, err)

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = storage.NewLocal(file)
	assert.Error(t, err, "a file is not a directory")

	t.Chdir(t.TempDir())
	rel, err := storage.NewLocal("rel")
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(rel.Location()) && strings.HasSuffix(rel.Location(), "rel"))
}

package storage_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/storage"
)

func TestOpenLocalForms(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")

	s, err := storage.Open(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, dir, s.Location())
	assert.IsType(t, &storage.Local{}, s)

	s, err = storage.Open(ctx, "file://"+filepath.ToSlash(dir))
	require.NoError(t, err)
	assert.Equal(t, dir, s.Location())

	s, err = storage.Open(ctx, "file://localhost"+filepath.ToSlash(dir))
	require.NoError(t, err)
	assert.Equal(t, dir, s.Location())

	wd := t.TempDir()
	t.Chdir(wd)
	s, err = storage.Open(ctx, "runs/dev")
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(s.Location()), "relative paths are made absolute: %s", s.Location())
	assert.DirExists(t, filepath.Join(wd, "runs", "dev"))

	// A location round-trips through Open, Sub included.
	sub := storage.Sub(s, "sess-1")
	again, err := storage.Open(ctx, sub.Location())
	require.NoError(t, err)
	require.NoError(t, again.Put(ctx, "k", []byte("v")))
	got, err := sub.Get(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "v", string(got))
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, url, want string
		notContain      string
	}{
		{name: "empty", url: "", want: "empty storage location"},
		{name: "bad scheme", url: "ftp://host/dir", want: `unknown storage scheme "ftp"`},
		{name: "opaque scheme", url: "gs:bucket", want: "unknown storage scheme"},
		{name: "userinfo in s3 URL", url: "s3://AKIAEXAMPLE:hunter2@bucket/p", want: "AWS_ACCESS_KEY_ID", notContain: "hunter2"},
		{name: "userinfo in endpoint", url: "s3://bucket/p?endpoint=http://u:hunter2@127.0.0.1:9000", want: "environment", notContain: "hunter2"},
		{name: "missing bucket", url: "s3:///prefix", want: "no bucket"},
		{name: "bad prefix", url: "s3://bucket/a/../b", want: "invalid"},
		{name: "unknown parameter", url: "s3://bucket/p?endpont=http://x", want: `unknown s3 URL parameter "endpont"`},
		{name: "bad endpoint", url: "s3://bucket/p?endpoint=127.0.0.1:9000", want: "not an http(s) URL"},
		{name: "bad create_bucket", url: "s3://bucket/p?create_bucket=maybe", want: "create_bucket"},
		{name: "bad path_style", url: "s3://bucket/p?path_style=sure", want: "path_style"},
		{name: "file URL with host", url: "file://server/share", want: "only local directories"},
		{name: "relative file URL", url: "file:rel/dir", want: "no absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := storage.Open(ctx, tc.url)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if tc.notContain != "" {
				assert.NotContains(t, err.Error(), tc.notContain, "the error leaks a secret")
			}
		})
	}
}

func TestOpenS3WithoutServer(t *testing.T) {
	// Building an S3 store does not contact the server, so this checks the
	// URL mapping offline.
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	ctx := context.Background()
	s, err := storage.Open(ctx, "s3://bucket/sessions/?endpoint=http://127.0.0.1:1&region=eu-west-1")
	require.NoError(t, err)
	assert.Equal(t, "s3://bucket/sessions", s.Location())
	s, err = storage.Open(ctx, "s3://bucket")
	require.NoError(t, err)
	assert.Equal(t, "s3://bucket", s.Location())
	assert.Equal(t, "s3://bucket/run-7", storage.Sub(s, "run-7/").Location())
}

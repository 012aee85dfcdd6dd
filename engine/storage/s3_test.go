//go:build integration

package storage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/testenv"
)

func TestS3Suite(t *testing.T) {
	m := testenv.StartMinIO(t)
	ctx := context.Background()
	n := 0
	open := func(t *testing.T, url string) storage.Store {
		t.Helper()
		s, err := storage.Open(ctx, url)
		require.NoError(t, err)
		return s
	}
	t.Run("bucket root", func(t *testing.T) {
		runStoreSuite(t, func(t *testing.T) storage.Store {
			n++
			return open(t, m.URL(fmt.Sprintf("suite-%d", n), ""))
		})
	})
	t.Run("under prefix", func(t *testing.T) {
		runStoreSuite(t, func(t *testing.T) storage.Store {
			n++
			return open(t, m.URL("shared", fmt.Sprintf("deploy/run-%d/", n)))
		})
	})
}

func TestS3(t *testing.T) {
	m := testenv.StartMinIO(t)
	ctx := context.Background()

	t.Run("missing bucket", func(t *testing.T) {
		s, err := storage.Open(ctx, "s3://no-such-bucket/p?endpoint="+m.Endpoint)
		require.NoError(t, err, "Open does not contact the server without create_bucket")
		err = s.Put(ctx, "k", []byte("v"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "create_bucket=true")
		_, err = s.Get(ctx, "k")
		require.Error(t, err)
		assert.NotErrorIs(t, err, storage.ErrNotFound, "a missing bucket is a configuration error, not a missing key")
	})

	t.Run("static credentials and idempotent CreateBucket", func(t *testing.T) {
		cfg := storage.S3Config{
			Bucket: "static", Prefix: "p", Endpoint: m.Endpoint, PathStyle: true,
			AccessKey: m.AccessKey, SecretKey: m.SecretKey, CreateBucket: true,
		}
		s, err := storage.NewS3(ctx, cfg)
		require.NoError(t, err)
		require.NoError(t, s.CreateBucket(ctx), "creating an owned bucket again succeeds")
		_, err = storage.NewS3(ctx, cfg)
		require.NoError(t, err)
		require.NoError(t, s.Put(ctx, "k", []byte("v")))
		assert.Equal(t, "s3://static/p", s.Location())

		// The prefix is invisible through the store but real in the bucket.
		root, err := storage.Open(ctx, m.URL("static", ""))
		require.NoError(t, err)
		keys, err := root.List(ctx, "")
		require.NoError(t, err)
		assert.Equal(t, []string{"p/k"}, keys)
	})

	t.Run("wrong credentials", func(t *testing.T) {
		s, err := storage.NewS3(ctx, storage.S3Config{
			Bucket: "static", Endpoint: m.Endpoint, PathStyle: true,
			AccessKey: m.AccessKey, SecretKey: "wrong-secret",
		})
		require.NoError(t, err)
		_, err = s.Get(ctx, "p/k")
		require.Error(t, err)
		assert.NotErrorIs(t, err, storage.ErrNotFound)
		assert.Contains(t, err.Error(), "credentials")
	})

	t.Run("half static credentials", func(t *testing.T) {
		_, err := storage.NewS3(ctx, storage.S3Config{Bucket: "b", AccessKey: "only-id"})
		assert.ErrorContains(t, err, "both")
	})

	t.Run("list pages", func(t *testing.T) {
		// ListObjectsV2 returns at most 1000 keys a page.
		s, err := storage.Open(ctx, m.URL("pages", ""))
		require.NoError(t, err)
		for i := range 1005 {
			require.NoError(t, s.Put(ctx, fmt.Sprintf("k/%04d", i), nil))
		}
		keys, err := s.List(ctx, "k/")
		require.NoError(t, err)
		assert.Len(t, keys, 1005)
		assert.Equal(t, "k/1004", keys[1004])
	})
}

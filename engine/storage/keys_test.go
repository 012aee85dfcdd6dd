package storage_test

import (
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/engine/storage"
)

func TestValidKey(t *testing.T) {
	for _, key := range []string{
		"a", "session.json", "agents/a/001/workspace/src/main.go", ".hidden", "a/..b/c..", "a b/ü.txt",
		strings.Repeat("k", storage.MaxKeyLen),
	} {
		assert.NoError(t, storage.ValidKey(key), "%q", key)
	}
	for _, tc := range refusedKeys {
		err := storage.ValidKey(tc.key)
		if assert.Error(t, err, tc.name) {
			assert.Contains(t, err.Error(), fmt.Sprintf("%q", tc.key), "the error names the key")
		}
	}
	assert.ErrorContains(t, storage.ValidKey("a/.."), "escape")
	assert.ErrorContains(t, storage.ValidKey(strings.Repeat("k", storage.MaxKeyLen+1)), "limit")
}

// FuzzValidKey checks the property the rules exist for: an accepted key is
// already a clean relative path, so joining it under a root stays there.
func FuzzValidKey(f *testing.F) {
	for _, tc := range refusedKeys {
		f.Add(tc.key)
	}
	f.Add("agents/a/001/answer.json")
	f.Fuzz(func(t *testing.T, key string) {
		if storage.ValidKey(key) != nil {
			return
		}
		if path.Clean(key) != key || path.IsAbs(key) || strings.HasPrefix(key, "../") || key == ".." {
			t.Fatalf("ValidKey accepted unclean key %q", key)
		}
		if !strings.HasPrefix(path.Join("/root", key), "/root/") {
			t.Fatalf("ValidKey accepted escaping key %q", key)
		}
	})
}

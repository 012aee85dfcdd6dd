package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeArgs(t *testing.T, path, content string) string {
	t.Helper()
	b, err := json.Marshal(map[string]string{"path": path, "content": content})
	require.NoError(t, err)
	return string(b)
}

// Issue 22, item 2: 20,000 one-byte files and 500 MB in one step were all
// delivered; the only limit was per call.
func TestWorkspaceFilesAndBytesAreBounded(t *testing.T) {
	dir := t.TempDir()
	w := Workspace{Dir: dir, Limits: WorkspaceLimits{Files: 3, Bytes: 100}}
	for i := range 3 {
		res, _ := w.Call(WriteFile, writeArgs(t, fmt.Sprintf("f%d.txt", i), "x"))
		require.False(t, res.IsError, res.Content)
	}
	res, _ := w.Call(WriteFile, writeArgs(t, "f3.txt", "x"))
	require.True(t, res.IsError)
	assert.Contains(t, res.Content, "your workspace holds 3 files, the limit for one step is 3")
	res, _ = w.Call(WriteFile, writeArgs(t, "f0.txt", strings.Repeat("y", 50))) // a replaced file gives its room back
	require.False(t, res.IsError, res.Content)
	res, _ = w.Call(WriteFile, writeArgs(t, "f1.txt", strings.Repeat("y", 60)))
	require.True(t, res.IsError)
	assert.Contains(t, res.Content, "would hold 111 bytes, over the 100-byte limit")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3)
}

// Issue 22, item 10: a 3,000-level path was written, and the paid step
// failed when its workspace was stored. It is refused when written.
func TestWorkspacePathLengthAndDepthAreChecked(t *testing.T) {
	w := Workspace{Dir: t.TempDir()}
	deep := strings.Repeat("a/", 3000) + "f.txt"
	res, _ := w.Call(WriteFile, writeArgs(t, deep, "x"))
	require.True(t, res.IsError)
	assert.Contains(t, res.Content, "over the 512-byte limit for a path")
	res, _ = w.Call(WriteFile, writeArgs(t, strings.Repeat("a/", 40)+"f", "x"))
	require.True(t, res.IsError)
	assert.Contains(t, res.Content, "41 levels deep, over the limit of 32")
	res, _ = w.Call(WriteFile, writeArgs(t, strings.Repeat("b", 513), "x"))
	require.True(t, res.IsError)
	res, _ = w.Call(WriteFile, writeArgs(t, strings.Repeat("a/", 31)+"f", "x"))
	require.False(t, res.IsError, res.Content)
	_, err := os.Stat(filepath.Join(w.Dir, strings.Repeat("a/", 31)+"f"))
	require.NoError(t, err)
}

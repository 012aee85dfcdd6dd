package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 22, item 4: a prd.md, a step file, the steps/ folder or a prompt
// file that was a symbolic link to a file outside was read, stored in the
// workflow input and sent to the model. Each is refused, naming the file;
// links that stay inside still work.
func TestScenarioFilesDoNotFollowLinksOutside(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("db_password=hunter2"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "steps"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "steps", "a.md"), []byte("db_password=hunter2"), 0o600))

	scenario := func(t *testing.T) string {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"meta.yaml": "steps:\n  - {id: a, file: a.md}\n", "steps/a.md": "do a"})
		return dir
	}
	for name, link := range map[string]func(dir string) string{
		"prd.md": func(dir string) string {
			require.NoError(t, os.Symlink(secret, filepath.Join(dir, "prd.md")))
			return "prd.md"
		},
		"step file": func(dir string) string {
			require.NoError(t, os.Remove(filepath.Join(dir, "steps", "a.md")))
			require.NoError(t, os.Symlink(secret, filepath.Join(dir, "steps", "a.md")))
			return "a.md"
		},
		"steps folder": func(dir string) string {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "steps")))
			require.NoError(t, os.Symlink(filepath.Join(outside, "steps"), filepath.Join(dir, "steps")))
			return "a.md"
		},
		"relative link": func(dir string) string {
			rel, err := filepath.Rel(dir, secret)
			require.NoError(t, err)
			require.NoError(t, os.Symlink(rel, filepath.Join(dir, "prd.md")))
			return "prd.md"
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := scenario(t)
			file := link(dir)
			_, err := LoadScenario(dir, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), file)
			assert.Contains(t, err.Error(), "symbolic links included")
			assert.NotContains(t, err.Error(), "hunter2")
		})
	}

	// A link that stays inside the folder is followed.
	dir := scenario(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("the product"), 0o644))
	require.NoError(t, os.Symlink("notes.md", filepath.Join(dir, "prd.md")))
	d, err := LoadScenario(dir, nil)
	require.NoError(t, err)
	assert.Equal(t, "the product", d.Context)
}

func TestPipelineFilesDoNotFollowLinksOutside(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.md")
	require.NoError(t, os.WriteFile(outside, []byte("db_password=hunter2"), 0o600))
	for _, field := range []string{"prompt_file", "context"} {
		t.Run(field, func(t *testing.T) {
			dir := t.TempDir()
			body := "start: a\nbackend: {model: m}\nsteps:\n  - name: a\n    prompt: do a\n"
			if field == "prompt_file" {
				body = "start: a\nbackend: {model: m}\nsteps:\n  - name: a\n    prompt_file: p.md\n"
			} else {
				body = "context: p.md\n" + body
			}
			writeFiles(t, dir, map[string]string{"pipeline.yaml": body})
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, "p.md")))
			_, err := LoadPipeline(filepath.Join(dir, "pipeline.yaml"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), `"p.md"`)
			assert.Contains(t, err.Error(), "symbolic links included")
			assert.NotContains(t, err.Error(), "hunter2")
		})
	}
}

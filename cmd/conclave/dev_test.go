package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/serve"
)

func TestDevRunHintNamesAnotherUI(t *testing.T) {
	require.Equal(t, `TEMPORAL_ADDRESS=127.0.0.1:7233 ./bin/conclave run --config team.yaml "your task"`,
		devRunHint("127.0.0.1:7233", "http://127.0.0.1:8233", "team.yaml"))
	// run's links point at 8233 unless told otherwise.
	require.Equal(t, `TEMPORAL_ADDRESS=127.0.0.1:7233 CONCLAVE_UI=http://127.0.0.1:18233 ./bin/conclave run --config team.yaml "your task"`,
		devRunHint("127.0.0.1:7233", "http://127.0.0.1:18233", "team.yaml"))
}

func TestDevCommandKeepsTheDB(t *testing.T) {
	require.Equal(t, "./bin/conclave dev", devCommand(defaultDevDB()))
	require.Equal(t, "./bin/conclave dev --db /tmp/demo/t.db", devCommand("/tmp/demo/t.db"))
	require.Equal(t, `./bin/conclave dev --db '/tmp/my demo/it'\''s.db'`, devCommand("/tmp/my demo/it's.db"))
}

// docs/serve.md's quick start serves the team `conclave dev` writes when it
// has no OpenAI key, so it works offline: the path it gives must be the one
// dev writes, and serve must load that file.
func TestServeQuickStartServesTheOfflineTeam(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "serve.md"))
	require.NoError(t, err)
	t.Chdir(t.TempDir())
	path, err := writeOfflineTeam(filepath.Dir(defaultDevDB()), "http://127.0.0.1:9/v1")
	require.NoError(t, err)
	require.Contains(t, string(doc), "./bin/conclave serve --config demo="+filepath.ToSlash(path))
	team, _, err := serve.LoadTeam("demo=" + path)
	require.NoError(t, err)
	require.Equal(t, "demo", team.Name)
}

// --api-keys-file replaces CONCLAVE_API_KEYS, as docs/serve.md says.
func TestAPIKeysFileReplacesTheVariable(t *testing.T) {
	t.Setenv("CONCLAVE_API_KEYS", "env:sk-eeeeeeeeeeeeeeee")
	file := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(file, []byte("alice:sk-0123456789abcdef\n"), 0o600))
	keys, err := apiKeys(file)
	require.NoError(t, err)
	require.Equal(t, []serve.Key{{Name: "alice", Secret: "sk-0123456789abcdef"}}, keys)
	keys, err = apiKeys("")
	require.NoError(t, err)
	require.Equal(t, []serve.Key{{Name: "env", Secret: "sk-eeeeeeeeeeeeeeee"}}, keys)
}

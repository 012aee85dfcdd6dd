package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeRefusesBeforeListening: the checks that keep a server from
// being exposed run before it dials Temporal or opens a port.
func TestServeRefusesBeforeListening(t *testing.T) {
	dir := t.TempDir()
	team := filepath.Join(dir, "team.yaml")
	require.NoError(t, os.WriteFile(team, []byte("agents:\n  - id: a\n    backend: {type: openai, model: m, base_url: http://127.0.0.1:9/v1}\n"), 0o600))
	empty := filepath.Join(dir, "keys")
	require.NoError(t, os.WriteFile(empty, []byte("# no keys yet\n"), 0o600))
	t.Setenv("CONCLAVE_API_KEYS", "")
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"serve", "--config", team, "--listen", "0.0.0.0:4000"}, "no API key is set"},
		{[]string{"serve", "--config", team, "--api-keys-file", empty}, "holds no key"},
		{[]string{"serve", "--listen", "127.0.0.1:4000"}, "at least one --config"},
		{[]string{"serve", "--config", "x=" + filepath.Join(dir, "missing.yaml")}, "read config"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errb)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, errb.String(), tc.says, tc.args)
	}
}

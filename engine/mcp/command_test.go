package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/tools"
)

func sandbox(t *testing.T) *Sandbox {
	t.Helper()
	s := FindSandbox(false, false)
	if s.Missing != "" {
		t.Skipf("no sandbox on this machine: %s (make test installs bubblewrap)", s.Missing)
	}
	return s
}

func runCommand(t *testing.T, tb *Toolbox, line string) tools.Result {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"command": line})
	return tb.Call(context.Background(), agent.Call{Name: commandTool, Arguments: string(args)})
}

// The workspace is the only writable path; the network, a fork bomb and an
// endless loop are contained and reported.
func TestCommandSandbox(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	tb := open(t, Options{Workspace: ws, Timeout: 5 * time.Second, Command: &CommandOptions{Sandbox: sandbox(t)}})
	require.True(t, tb.Has(commandTool))

	res := runCommand(t, tb, "echo hello > note.txt && cat note.txt")
	require.False(t, res.IsError, res.Content)
	assert.Contains(t, res.Content, "hello")
	data, err := os.ReadFile(filepath.Join(ws, "note.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(data))

	res = runCommand(t, tb, `t=$(mktemp) && echo scratch > "$t" && cat "$t" && touch /tmp/x && echo tmp-ok`)
	require.False(t, res.IsError, res.Content)
	assert.Contains(t, res.Content, "tmp-ok", "the private /tmp is writable")

	outside := filepath.Join(t.TempDir(), "escaped")
	res = runCommand(t, tb, "echo x > "+outside+"; echo x > /etc/escaped; echo x > /usr/escaped")
	assert.True(t, res.IsError)
	assert.NoFileExists(t, outside)
	assert.NoFileExists(t, "/etc/escaped")

	res = runCommand(t, tb, "cat /proc/net/route | wc -l; getent hosts example.com || echo no-network; (exec 3<>/dev/tcp/127.0.0.1/1) 2>&1 || true")
	assert.Contains(t, res.Content, "no-network")

	start := time.Now()
	res = runCommand(t, tb, "while :; do :; done")
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "ran longer than 5s")
	assert.Less(t, time.Since(start), 30*time.Second)

	res = runCommand(t, tb, "bomb() { bomb | bomb & }; bomb; sleep 1; echo survived")
	assert.Contains(t, res.Content, "Cannot fork", "a fork bomb hits the process limit")

	res = runCommand(t, tb, "sleep 300 &")
	assert.False(t, res.IsError, res.Content)
}

func TestCommandFilters(t *testing.T) {
	t.Parallel()
	tb := open(t, Options{Command: &CommandOptions{Sandbox: sandbox(t), Allowed: []string{"echo .*"}, Blocked: []string{"rm .*"}}})
	assert.False(t, runCommand(t, tb, "echo ok").IsError)
	res := runCommand(t, tb, "ls")
	assert.Contains(t, res.Content, "none of the allowed patterns")
	res = runCommand(t, tb, "echo a; rm -rf x")
	assert.Contains(t, res.Content, "blocked pattern")
}

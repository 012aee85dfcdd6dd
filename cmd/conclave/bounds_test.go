package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

// Issue 22, item 1: a model whose reply never ends took step mode to
// gigabytes. The reply is stopped at the worker's limit; the model is told
// once, and a second endless reply fails the step, naming the limit.
func TestStepModeStopsAnEndlessReply(t *testing.T) {
	setStepKey(t)
	t.Setenv("CONCLAVE_MAX_REPLY_BYTES", "65536")
	srv := llmtest.Start(t, llmtest.Text(strings.Repeat("blah ", 200)).Forever())
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", agentConfig(t, dir, "agent_a", srv.URL()),
		"--agents", "agent_a,agent_b", "--automation", "task")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errs, "went over 65536 bytes (reply bytes limit)")
	require.Equal(t, 2, srv.Count(), "told once, then failed")
	assert.Contains(t, srv.Requests()[1].Last().Content, "Your previous reply was not received")
}

// Issue 22, item 2: one reply of many write_file calls stored them all and
// exited 0. The workspace of a step is bounded as files are written: the
// model is told, the step goes on, and what is stored stays in bounds.
func TestStepModeBoundsTheWorkspace(t *testing.T) {
	setStepKey(t)
	t.Setenv("CONCLAVE_MAX_WORKSPACE_FILES", "10")
	var calls []llmtest.ToolCall
	for i := range 40 {
		calls = append(calls, llmtest.ToolCall{ID: fmt.Sprintf("w%d", i), Name: "write_file",
			Arguments: fmt.Sprintf(`{"path":"f%02d.txt","content":"x"}`, i)})
	}
	srv := llmtest.Start(t,
		llmtest.Calls(calls...).Once(),
		llmtest.Call("write_file", `{"path":"`+strings.Repeat("d/", 3000)+`f.txt","content":"deep"}`).Once(),
		llmtest.Call("new_answer", `{"content":"done, with the files that fit"}`))
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", agentConfig(t, dir, "agent_a", srv.URL()),
		"--agents", "agent_a,agent_b", "--automation", "task")
	require.Equal(t, 0, code, errs)
	stored, err := os.ReadDir(filepath.Join(session, "agents/agent_a/001/workspace"))
	require.NoError(t, err)
	assert.Len(t, stored, 10)
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	refused := 0
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" && strings.Contains(m.Content, "the limit for one step is 10") {
			refused++
		}
	}
	assert.Equal(t, 30, refused, "every write past the limit is refused and the model told")
	assert.Contains(t, reqs[2].Last().Content, "over the 512-byte limit for a path")
}

// The transcript a step stores is bounded: past the trace limit the step
// ends with a reason naming it.
func TestStepModeBoundsTheTrace(t *testing.T) {
	setStepKey(t)
	t.Setenv("CONCLAVE_MAX_TRACE_BYTES", "1048576")
	t.Setenv("CONCLAVE_MAX_WORKSPACE_BYTES", "104857600")
	var n atomic.Int32
	srv := llmtest.Start(t, llmtest.Func(func(llmtest.Request) llmtest.Reply {
		return call("write_file", fmt.Sprintf(`{"path":"part%d.txt","content":"%s"}`, n.Add(1), strings.Repeat("z", 200<<10)))
	}))
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", agentConfig(t, dir, "agent_a", srv.URL()),
		"--agents", "agent_a,agent_b", "--automation", "task")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errs, "over the 1048576-byte trace limit")
	info, err := os.Stat(filepath.Join(session, "agents/agent_a/001/trace.jsonl"))
	require.NoError(t, err)
	assert.LessOrEqual(t, info.Size(), int64(1<<20))
	assert.LessOrEqual(t, srv.Count(), 6)
}

// Issue 22, item 7: validate printed a model name's ESC, BEL, newline and
// OSC 52 (clipboard write) sequences as they were, and validate is how a
// user reads an untrusted config.
func TestValidateNeutralisesTerminalSequences(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "team.yaml")
	model := "gpt\x1b]52;c;ZXZpbA==\x07\x1b[2J\nerror: fake line\u202e"
	require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("agents:\n  - id: a\n    backend:\n      model: %q\n      base_url: http://localhost:8000/v1\n", model)), 0o644))
	code, out, errs := runCLI(t, "validate", "--config", p)
	require.Equal(t, 0, code, errs)
	for _, bad := range []string{"\x1b", "\x07", "\u202e", "\nerror: fake line"} {
		assert.NotContains(t, out, bad)
	}
	assert.Contains(t, out, "gpt␛]52;c;ZXZpbA==")
}

// Issue 22, item 10: step mode's --agents accepted ids that differ only in
// case, 10,001 agents and CON/NUL; it now follows the config's id rules,
// before any model call.
func TestStepModeTeamFollowsTheConfigsIDRules(t *testing.T) {
	setStepKey(t)
	srv := llmtest.Start(t, llmtest.Call("new_answer", `{"content":"x"}`))
	dir := t.TempDir()
	cfg := agentConfig(t, dir, "agent_a", srv.URL())
	many := make([]string, 10001)
	for i := range many {
		many[i] = fmt.Sprintf("a%05d", i)
	}
	many[0] = "agent_a"
	for team, want := range map[string]string{
		"agent_a,AGENT_A":       "differs from",
		"agent_a,CON":           `"CON" is a device name on Windows`,
		"agent_a,nul.txt":       "device name",
		strings.Join(many, ","): "10001 agents, at most 200",
	} {
		code, _, errs := runCLI(t, "step", "--session-dir", filepath.Join(dir, "s"), "--config", cfg, "--agents", team, "--automation", "task")
		assert.Equal(t, 1, code, errs)
		assert.Contains(t, errs, want)
	}
	assert.Equal(t, 0, srv.Count())
	// The config refuses them too.
	p := filepath.Join(dir, "con.yaml")
	require.NoError(t, os.WriteFile(p, []byte("agents:\n  - id: CON\n    backend: {model: m, base_url: \"http://localhost:1/v1\"}\n"), 0o644))
	code, out, _ := runCLI(t, "validate", "--config", p)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "device name")
}

// Issue 22, item 10: the codec server bound every interface without a
// word when given :PORT, and held open bodies sent a byte a second.
func TestCodecServerWarnsAndBoundsBodies(t *testing.T) {
	for listen, warns := range map[string]bool{
		":8081": true, "0.0.0.0:8081": true, "[::]:8081": true, "10.1.2.3:8081": true,
		"127.0.0.1:8081": false, "localhost:8081": false, "[::1]:8081": false,
	} {
		assert.Equal(t, warns, exposedWarning(listen) != "", listen)
	}
	assert.Contains(t, exposedWarning(":8081"), "every interface")

	srv := codecServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}), 500*time.Millisecond)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /decode HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
	require.NoError(t, err)
	// Trickle the body; the server must close the connection long before
	// the body could be complete (1,000 bytes at 20 a second is 50 s).
	closed := false
	for range 1000 {
		if _, err := conn.Write([]byte("x")); err != nil {
			closed = true
			break
		}
		_ = conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := conn.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			closed = true
			break
		}
	}
	assert.True(t, closed, "the server held a trickled body open")
}

// The files all of a session's workspaces hold are bounded too: a later
// step may add only what the session has room for.
func TestStepModeBoundsTheSessionsFiles(t *testing.T) {
	setStepKey(t)
	t.Setenv("CONCLAVE_MAX_SESSION_FILES", "15")
	var step atomic.Int32
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		if r.Last().Role == "tool" {
			return call("new_answer", fmt.Sprintf(`{"content":"answer %d"}`, step.Load()))
		}
		var calls []llmtest.ToolCall
		for i := range 10 {
			calls = append(calls, llmtest.ToolCall{ID: fmt.Sprintf("w%d", i), Name: "write_file",
				Arguments: fmt.Sprintf(`{"path":"s%d/f%d.txt","content":"x"}`, step.Load(), i)})
		}
		return llmtest.Reply{ToolCalls: calls}
	}))
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	cfg := agentConfig(t, dir, "agent_a", srv.URL())
	stored := func(n int) int {
		count := 0
		_ = filepath.WalkDir(filepath.Join(session, fmt.Sprintf("agents/agent_a/%03d/workspace", n)), func(_ string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				count++
			}
			return nil
		})
		return count
	}
	for n := 1; n <= 2; n++ {
		step.Store(int32(n))
		code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", cfg, "--agents", "agent_a,agent_b", "--automation", "task")
		require.Equal(t, 0, code, errs)
	}
	assert.Equal(t, 10, stored(1))
	assert.Equal(t, 5, stored(2), "the session had room for 5 more files")
}

// A careless operator's malformed limit stops the process that would run
// steps before any step, naming the variable.
func TestMalformedLimitStopsBeforeAnyStep(t *testing.T) {
	setStepKey(t)
	srv := llmtest.Start(t, llmtest.Call("new_answer", `{"content":"x"}`))
	dir := t.TempDir()
	for name, value := range map[string]string{"CONCLAVE_MAX_REPLY_BYTES": "0", "CONCLAVE_MAX_TRACE_BYTES": "1k", "CONCLAVE_MAX_TOOL_CALLS": "-1"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			code, _, errs := runCLI(t, "step", "--session-dir", filepath.Join(dir, "s"), "--config", agentConfig(t, dir, "agent_a", srv.URL()),
				"--agents", "agent_a", "--automation", "task")
			assert.Equal(t, 1, code)
			assert.Contains(t, errs, name)
		})
	}
	assert.Equal(t, 0, srv.Count())
}

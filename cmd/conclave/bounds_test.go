package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
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

// Issue 22, item 5: two `conclave step` runs of one agent at once both
// exited 0 into one step folder, the first answer lost. The second run is
// now refused before any model call (exit 1, saying what to do), locally
// and on S3 (real MinIO, conditional create), and the folder holds the
// first run's action alone.
func TestStepModeOneWriterPerStepFolder(t *testing.T) {
	minio := testenv.StartMinIO(t)
	setStepKey(t)
	for name, session := range map[string]string{
		"local": filepath.Join(t.TempDir(), "session"),
		"s3":    minio.URL("sessions", "one-writer"),
	} {
		t.Run(name, func(t *testing.T) {
			release := make(chan struct{})
			srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
				select {
				case <-release:
				case <-time.After(time.Minute):
				}
				if r.Contains("the first run's answer") {
					return call("vote", `{"agent_id":"agent1","reason":"it is there"}`)
				}
				return call("new_answer", `{"content":"the first run's answer"}`)
			}))
			dir := t.TempDir()
			cfg := agentConfig(t, dir, "agent_a", srv.URL())
			step := func() (int, string, string) {
				return runCLI(t, "step", "--session-dir", session, "--config", cfg, "--agents", "agent_a,agent_b", "--automation", "task")
			}
			first := make(chan int, 1)
			go func() { code, _, _ := step(); first <- code }()
			require.Eventually(t, func() bool { return srv.Count() == 1 }, 30*time.Second, 10*time.Millisecond)

			code, _, errs := step()
			assert.Equal(t, 1, code)
			assert.Contains(t, errs, "agents/agent_a/001/claim.json: step 1 of agent_a is being run by the run started")
			assert.Equal(t, 1, srv.Count(), "the second run must not call the model")

			close(release)
			require.Equal(t, 0, <-first)
			s := status(t, session, "--agents", "agent_a,agent_b")
			assert.Equal(t, "answered", s.Agents["agent_a"].State)
			assert.Equal(t, 1, s.Agents["agent_a"].LatestStep)

			// The claim is gone with its run: the next step runs.
			code, out, errs := step()
			require.Equal(t, 0, code, errs)
			assert.Contains(t, out, `"step_number":2`)
		})
	}
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

package integration

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/tools"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// TestMalformedInputs feeds malformed input of every kind a user or a model
// can send and checks each gets a clear error naming the problem, nothing
// panics, and nothing already stored changes.
func TestMalformedInputs(t *testing.T) {
	t.Run("config", malformedConfigs)
	t.Run("tool arguments", malformedToolArgs)
	t.Run("session dir", malformedSessionDirs)
	t.Run("workflow input", malformedWorkflowInputs)
}

func malformedConfigs(t *testing.T) {
	agent := "agents:\n  - id: a\n    backend: {type: openai, model: m}\n"
	cases := map[string]struct{ yaml, want string }{
		"unknown top key":     {agent + "orchestrater: {}\n", `unknown key "orchestrater"`},
		"unknown nested key":  {agent + "orchestrator:\n  fairnes_enabled: true\n", "fairnes_enabled"},
		"api key in file":     {"agents:\n  - id: a\n    backend: {type: openai, model: m, api_key: sk-x}\n", "api_key_env"},
		"id with slash":       {"agents:\n  - id: a/b\n    backend: {type: openai, model: m}\n", "agents[0].id"},
		"id with dots":        {"agents:\n  - id: ..\n    backend: {type: openai, model: m}\n", "agents[0].id"},
		"uppercase id":        {"agents:\n  - id: Agent\n    backend: {type: openai, model: m}\n", "agents[0].id"},
		"duplicate ids":       {agent + "  - id: a\n    backend: {type: openai, model: m}\n", "a"},
		"wrong type":          {agent + "orchestrator:\n  max_steps_per_agent: lots\n", "max_steps_per_agent"},
		"empty file":          {"", "empty"},
		"binary garbage":      {"\x00\x01\x02\xff\xfe", "invalid YAML"},
		"merge key panic":     {"orchestrator: {<<, {000000}}", "merge keys"},
		"no agents":           {"agents: []\n", "agent"},
		"unknown backend":     {"agents:\n  - id: a\n    backend: {type: claude, model: m}\n", "type"},
		"bad consensus":       {agent + "orchestrator:\n  consensus: unanimous\n", "consensus"},
		"negative limit":      {agent + "orchestrator:\n  max_new_answers_per_agent: -1\n", "max_new_answers_per_agent"},
		"two documents":       {agent + "---\n" + agent, "one YAML document"},
		"billion laughs":      {laughs(), "unknown key"},
		"bad api_key_env":     {"agents:\n  - id: a\n    backend: {type: openai, model: m, api_key_env: sk-abc123}\n", "api_key_env"},
		"presenter not agent": {agent + "orchestrator:\n  coordination_mode: decomposition\n  presenter: zed\n", "presenter"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.yaml), "team.yaml")
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

// laughs is the classic alias-expansion bomb.
func laughs() string {
	var b strings.Builder
	b.WriteString("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		b.WriteString(n + ": &" + n + " [*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + "]\n")
		prev = n
	}
	return b.String()
}

func malformedToolArgs(t *testing.T) {
	parse := map[string]struct {
		fn   func(string) error
		args string
		want string
	}{
		"vote bad json":       {voteErr, `{"agent_id":`, "not valid JSON"},
		"vote unknown field":  {voteErr, `{"agent_id":"agent1","reason":"r","extra":1}`, "extra"},
		"vote wrong type":     {voteErr, `{"agent_id":1,"reason":"r"}`, "agent_id"},
		"vote huge reason":    {voteErr, `{"agent_id":"agent1","reason":"` + strings.Repeat("x", 20<<10) + `"}`, "reason"},
		"answer empty":        {answerErr, `{"content":"   "}`, "content"},
		"answer not object":   {answerErr, `["content"]`, "object"},
		"answer over limit":   {answerErr, `{"content":"` + strings.Repeat("y", tools.MaxAnswerBytes+1) + `"}`, "content"},
		"stop bad status":     {stopErr, `{"summary":"s","status":"done"}`, "status"},
		"stop trailing text":  {stopErr, `{"summary":"s","status":"complete"} and more`, "stop"},
		"answer NUL in field": {answerErr, `{"content":"a\u0000b", "x": 1}`, "x"},
	}
	for name, c := range parse {
		t.Run(name, func(t *testing.T) {
			err := c.fn(c.args)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}

	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	secret := filepath.Join(dir, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("outside"), 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(ws, "link")))
	w := tools.Workspace{Dir: ws, Peers: map[string]string{"agent2": t.TempDir()}}
	calls := map[string][2]string{
		"read parent":        {tools.ReadFile, `{"path":"../secret.txt"}`},
		"read absolute":      {tools.ReadFile, `{"path":"` + secret + `"}`},
		"read through link":  {tools.ReadFile, `{"path":"link"}`},
		"write through link": {tools.WriteFile, `{"path":"link","content":"pwned"}`},
		"write escaping":     {tools.WriteFile, `{"path":"a/../../secret.txt","content":"pwned"}`},
		"write to peer":      {tools.WriteFile, `{"path":"peers/agent2/x","content":"y"}`},
		"peer id slash":      {tools.ReadFile, `{"path":"peers/agent1/../agent2/x"}`},
		"NUL in path":        {tools.WriteFile, `{"path":"a\u0000b","content":"y"}`},
		"backslash path":     {tools.WriteFile, `{"path":"a\\b","content":"y"}`},
		"bad json":           {tools.ListFiles, `{"path":`},
	}
	for name, c := range calls {
		t.Run(name, func(t *testing.T) {
			res, handled := w.Call(c[0], c[1])
			require.True(t, handled)
			require.True(t, res.IsError, res.Content)
			require.NotEmpty(t, res.Content)
		})
	}
	data, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "outside", string(data), "nothing outside the workspace changed")
}

func voteErr(a string) error   { _, _, err := tools.ParseVote(a); return err }
func answerErr(a string) error { _, err := tools.ParseNewAnswer(a); return err }
func stopErr(a string) error   { _, _, err := tools.ParseStop(a); return err }

func malformedSessionDirs(t *testing.T) {
	bin := conclaveBinary(t)
	good := `{"agent_id":"agent_a","answer":"fine","timestamp":"2026-03-20T22:32:03Z"}`
	cases := map[string]struct {
		files map[string]string
		warn  string
	}{
		"corrupt answer":        {map[string]string{"agents/agent_b/001/answer.json": `{"answer": `}, "agents/agent_b/001/answer.json"},
		"vote with wrong types": {map[string]string{"agents/agent_b/001/vote.json": `{"voter": 3, "target": ["x"]}`}, "agents/agent_b/001/vote.json"},
		"empty vote":            {map[string]string{"agents/agent_b/001/vote.json": ``}, "agents/agent_b/001/vote.json"},
		"vote without target":   {map[string]string{"agents/agent_b/001/vote.json": `{"voter":"agent_b","seen_steps":{}}`}, "target"},
		"step folder abc":       {map[string]string{"agents/agent_b/abc/answer.json": good}, "agents/agent_b/abc/answer.json"},
		"invalid agent folder":  {map[string]string{"agents/Agent B/001/answer.json": good}, "Agent B"},
		"corrupt session.json":  {map[string]string{"session.json": `[1,2`}, "session.json"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "agents/agent_a/001/answer.json", good)
			for k, v := range c.files {
				write(t, dir, k, v)
			}
			before := digest(t, dir)
			out, errOut, code := runBin(t, bin, "session", "status", "--session-dir", dir)
			require.Equal(t, 0, code, errOut)
			require.Contains(t, errOut, c.warn)
			require.True(t, json.Valid([]byte(out)), out)
			require.Equal(t, before, digest(t, dir), "status changed the session")
		})
	}
	t.Run("symlink out of the session", func(t *testing.T) {
		dir := t.TempDir()
		outside := t.TempDir()
		write(t, outside, "001/answer.json", good)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "agents"), 0o755))
		require.NoError(t, os.Symlink(outside, filepath.Join(dir, "agents", "agent_x")))
		out, errOut, code := runBin(t, bin, "session", "status", "--session-dir", dir)
		require.Equal(t, 0, code, errOut)
		require.NotContains(t, out, "agent_x", "a link out of the session is not followed")
	})
	t.Run("missing dir", func(t *testing.T) {
		_, errOut, code := runBin(t, bin, "session", "status", "--session-dir", filepath.Join(t.TempDir(), "nope"))
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "does not exist")
	})
}

func malformedWorkflowInputs(t *testing.T) {
	server := testenv.StartTemporal(t)
	st, err := worker.OpenStorage(context.Background(), t.TempDir())
	require.NoError(t, err)
	cl := server.Client(t)
	w := worker.New(cl, worker.Options{Store: st, Namespace: "default"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	agents := `{"agents":[{"id":"a","backend":{"type":"openai","model":"m","base_url":"http://127.0.0.1:1/v1"}}]}`
	cases := map[string]struct{ input, want string }{
		"missing task":       {`{"config":` + agents + `}`, "task: required"},
		"empty agents":       {`{"task":"t","config":{"agents":[]}}`, "config.agents"},
		"bad agent id":       {`{"task":"t","config":{"agents":[{"id":"A/B","backend":{"type":"openai","model":"m"}}]}}`, "agents[0].id"},
		"unknown consensus":  {`{"task":"t","config":{"agents":[{"id":"a","backend":{"type":"openai","model":"m"}}],"orchestrator":{"consensus":"vibes"}}}`, "consensus"},
		"negative limit":     {`{"task":"t","config":{"agents":[{"id":"a","backend":{"type":"openai","model":"m"}}],"orchestrator":{"max_steps_per_agent":-3}}}`, "max_steps_per_agent"},
		"session id escapes": {`{"task":"t","session_id":"../other","config":` + agents + `}`, "session_id"},
		"session id slash":   {`{"task":"t","session_id":"a/b","config":` + agents + `}`, "session_id"},
		"too many criteria":  {`{"task":"t","eval_criteria":[` + strings.TrimSuffix(strings.Repeat(`"c",`, config.MaxCriteria+1), ",") + `],"config":` + agents + `}`, "eval_criteria"},
		"negative heartbeat": {`{"task":"t","step_heartbeat_seconds":-1,"config":` + agents + `}`, "step_heartbeat_seconds"},
		"api key smuggled":   {`{"task":"t","config":{"agents":[{"id":"a","backend":{"type":"openai","model":"m","api_key_env":"sk-live-123"}}]}}`, "api_key_env"},
	}
	ctx := context.Background()

	for name, tc := range cases {

		t.Run(name, func(t *testing.T) {
			id := "bad-input-" + strings.ReplaceAll(name, " ", "-")
			run, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: worker.DefaultTaskQueue,
				WorkflowExecutionTimeout: time.Minute}, workflows.CoordinationName, json.RawMessage(tc.input))
			require.NoError(t, err)
			err = run.Get(ctx, nil)
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.True(t, appErr.NonRetryable())
			require.Contains(t, appErr.Error(), tc.want)
		})
	}
	keys, err := st.List(ctx, "")
	require.NoError(t, err)
	require.Empty(t, keys, "no invalid session stored anything")
}

func write(t *testing.T, dir, key, data string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(key))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
}

// digest hashes every file of a tree (paths and bytes).
func digest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.Write([]byte(p))
		h.Write(data)
		return nil
	}))
	return string(h.Sum(nil))
}

func runBin(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), errb.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errb.String(), 0
}

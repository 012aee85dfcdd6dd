//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/engine/tools"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
)

// Kinds of malformed input in TestBadInput's table.
const (
	biConfig   = "config"
	biWorkflow = "workflow"
	biSession  = "session"
	biArgs     = "args"
	biWS       = "workspace"
)

// badInput is one malformed input. Which fields matter depends on kind:
// text is the YAML (config), the JSON input (workflow) or the tool
// arguments (args, workspace); files and setup build a session directory.
type badInput struct {
	kind, name string
	text       string
	parse      func(string) error                      // args
	tool       string                                  // workspace
	files      map[string]string                       // session
	setup      func(t *testing.T, dir, outside string) // session
	absent     string                                  // session, workflow: must not appear in the output or error
	want       string                                  // distinctive substring of the error / warning
}

// TestBadInput feeds malformed configs, workflow inputs, session
// directories and tool arguments to the real code paths (a real Temporal
// dev server and the real binary where they are involved) and checks each
// is refused with an error naming the problem, without a panic, and that
// nothing already stored changes.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	agent := "agents:\n  - id: a\n    backend: {type: openai, model: m}\n"
	agentJSON := `{"agents":[{"id":"a","backend":{"type":"openai","model":"m","base_url":"http://127.0.0.1:1/v1"}}]}`
	goodAnswer := `{"agent_id":"agent_a","answer":"fine","timestamp":"2026-03-20T22:32:03Z"}`
	sessionID := func(id string) string { return `{"task":"t","session_id":` + id + `,"config":` + agentJSON + `}` }

	cases := []badInput{
		// ---- configs (config.Parse) ----
		{kind: biConfig, name: "unknown top key", text: agent + "orchestrater: {}\n", want: `unknown key "orchestrater"`},
		{kind: biConfig, name: "unknown agent key", text: "agents:\n  - id: a\n    modle: x\n    backend: {type: openai, model: m}\n", want: "modle"},
		{kind: biConfig, name: "unknown backend key", text: "agents:\n  - id: a\n    backend: {type: openai, model: m, temprature: 1}\n", want: "temprature"},
		{kind: biConfig, name: "api_key in backend", text: "agents:\n  - id: a\n    backend: {type: openai, model: m, api_key: sk-live-x}\n", want: "API keys do not belong in the config"},
		{kind: biConfig, name: "api_key at top", text: agent + "api_key: sk-live-x\n", want: "API keys do not belong in the config"},
		{kind: biConfig, name: "key value in api_key_env", text: "agents:\n  - id: a\n    backend: {type: openai, model: m, api_key_env: sk-abc123}\n", want: "api_key_env"},
		{kind: biConfig, name: "infrastructure variable as api_key_env", text: "agents:\n  - id: a\n    backend: {type: openai, model: m, api_key_env: AWS_SECRET_ACCESS_KEY}\n", want: "AWS_SECRET_ACCESS_KEY is a worker's infrastructure variable"},
		{kind: biConfig, name: "id with slash", text: "agents:\n  - id: a/b\n    backend: {type: openai, model: m}\n", want: "agents[0].id"},
		{kind: biConfig, name: "id with dotdot", text: "agents:\n  - id: ../x\n    backend: {type: openai, model: m}\n", want: "agents[0].id"},
		{kind: biConfig, name: "id starting with a dot", text: "agents:\n  - id: .hidden\n    backend: {type: openai, model: m}\n", want: "agents[0].id"},
		{kind: biConfig, name: "ids differing only in case", text: "agents:\n  - id: Qwen\n    backend: {type: openai, model: m}\n  - id: qwen\n    backend: {type: openai, model: m}\n", want: "agents[1].id"},
		{kind: biConfig, name: "duplicate ids", text: agent + "  - id: a\n    backend: {type: openai, model: m}\n", want: "agents[1].id"},
		{kind: biConfig, name: "wrong type limit", text: agent + "orchestrator:\n  max_steps_per_agent: lots\n", want: "max_steps_per_agent"},
		{kind: biConfig, name: "agents is a string", text: "agents: everyone\n", want: "agents"},
		{kind: biConfig, name: "negative limit", text: agent + "orchestrator:\n  max_new_answers_per_agent: -1\n", want: "max_new_answers_per_agent"},
		{kind: biConfig, name: "unknown consensus", text: agent + "orchestrator:\n  consensus: vibes\n", want: "consensus"},
		{kind: biConfig, name: "empty file", text: "", want: "the config is empty"},
		{kind: biConfig, name: "only comments", text: "# nothing here\n\n", want: "the config is empty"},
		{kind: biConfig, name: "binary garbage", text: "\x00\x01\x02\xff\xfe\x7f", want: "team.yaml"},
		{kind: biConfig, name: "billion laughs", text: biLaughs("agents"), want: "team.yaml"},
		{kind: biConfig, name: "billion laughs in orchestrator", text: agent + biLaughs("orchestrator"), want: "team.yaml"},
		{kind: biConfig, name: "merge key bomb", text: "orchestrator: {<<, {000000}}", want: "merge keys"},

		// ---- workflow inputs (real dev server) ----
		{kind: biWorkflow, name: "missing task", text: `{"config":` + agentJSON + `}`, want: "task: required"},
		{kind: biWorkflow, name: "blank task", text: `{"task":"   ","config":` + agentJSON + `}`, want: "task: required"},
		{kind: biWorkflow, name: "empty agents", text: `{"task":"t","config":{"agents":[]}}`, want: "config.agents"},
		{kind: biWorkflow, name: "no config", text: `{"task":"t"}`, want: "config.agents"},
		{kind: biWorkflow, name: "bad agent id", text: `{"task":"t","config":{"agents":[{"id":"A/../B","backend":{"type":"openai","model":"m"}}]}}`, want: "agents[0].id"},
		{kind: biWorkflow, name: "unknown consensus", text: `{"task":"t","config":{"agents":[{"id":"a","backend":{"type":"openai","model":"m"}}],"orchestrator":{"consensus":"vibes"}}}`, want: "consensus"},
		{kind: biWorkflow, name: "negative max steps", text: `{"task":"t","config":{"agents":[{"id":"a","backend":{"type":"openai","model":"m"}}],"orchestrator":{"max_steps_per_agent":-3}}}`, want: "max_steps_per_agent"},
		{kind: biWorkflow, name: "negative heartbeat", text: `{"task":"t","step_heartbeat_seconds":-1,"config":` + agentJSON + `}`, want: "step_heartbeat_seconds"},
		{kind: biWorkflow, name: "negative continue", text: `{"task":"t","max_steps_before_continue":-1,"config":` + agentJSON + `}`, want: "max_steps_before_continue"},
		{kind: biWorkflow, name: "session id slash", text: sessionID(`"a/b"`), want: "session_id"},
		{kind: biWorkflow, name: "session id dotdot", text: sessionID(`".."`), want: "session_id"},
		{kind: biWorkflow, name: "session id escapes", text: sessionID(`"../other"`), want: "session_id"},
		{kind: biWorkflow, name: "too many criteria", text: `{"task":"t","eval_criteria":[` + strings.TrimSuffix(strings.Repeat(`"c",`, config.MaxCriteria+1), ",") + `],"config":` + agentJSON + `}`, want: "eval_criteria"},
		{kind: biWorkflow, name: "task is a number", text: `{"task":5,"config":` + agentJSON + `}`, want: "task"},
		{kind: biWorkflow, name: "agents is a string", text: `{"task":"t","config":{"agents":"everyone"}}`, want: "agents"},
		{kind: biWorkflow, name: "criteria is an object", text: `{"task":"t","eval_criteria":{"a":1},"config":` + agentJSON + `}`, want: "eval_criteria"},
		{kind: biWorkflow, name: "misspelled session_id", text: `{"task":"t","sesion_id":"s","config":` + agentJSON + `}`, want: `unknown key "sesion_id" at the top level (did you mean "session_id"?)`},
		{kind: biWorkflow, name: "misspelled orchestrator key", text: `{"task":"t","config":{"agents":[{"id":"a","backend":{"type":"openai","model":"m"}}],"orchestrator":{"fairnes_enabled":false}}}`, want: `unknown key "fairnes_enabled" in config.orchestrator (did you mean "fairness_enabled"?)`},
		{kind: biWorkflow, name: "api_key in backend", text: `{"task":"t","config":{"agents":[{"id":"a","backend":{"type":"openai","model":"m","api_key":"sk-live-BADINPUT-1"}}]}}`, want: "config.agents[0].backend.api_key: API keys do not belong in the workflow input", absent: "sk-live-BADINPUT-1"},
		{kind: biWorkflow, name: "codec key as api_key_env", text: `{"task":"t","config":{"agents":[{"id":"a","backend":{"type":"openai","model":"m","base_url":"http://127.0.0.1:1/v1","api_key_env":"CONCLAVE_CODEC_KEY"}}]}}`, want: "CONCLAVE_CODEC_KEY is a worker's infrastructure variable (CONCLAVE_*)"},
		{kind: biWorkflow, name: "duplicate key", text: `{"task":"t","task":"u","config":` + agentJSON + `}`, want: "task: given more than once"},

		// ---- session directories (`conclave session status`) ----
		{kind: biSession, name: "corrupt answer", files: map[string]string{"agents/agent_b/001/answer.json": `{"answer": `}, want: "agents/agent_b/001/answer.json"},
		{kind: biSession, name: "vote wrong types", files: map[string]string{"agents/agent_b/001/vote.json": `{"voter": 3, "target": ["x"]}`}, want: "agents/agent_b/001/vote.json"},
		{kind: biSession, name: "empty vote", files: map[string]string{"agents/agent_b/001/vote.json": ``}, want: "agents/agent_b/001/vote.json"},
		{kind: biSession, name: "step folder abc", files: map[string]string{"agents/agent_b/abc/answer.json": goodAnswer}, want: "agents/agent_b/abc/answer.json"},
		{kind: biSession, name: "step folder zero", files: map[string]string{"agents/agent_b/000/answer.json": goodAnswer}, want: "agents/agent_b/000/answer.json"},
		// Keys with control characters are not valid storage keys: the store
		// lists no such file, so they are ignored (not read, not shown).
		{kind: biSession, name: "control char in name", files: map[string]string{"agents/agent_b/001/vote\x01.json": goodAnswer, "agents/age\x07nt/001/answer.json": goodAnswer}, absent: "age\u0007nt"},
		{kind: biSession, name: "invalid agent folder", files: map[string]string{"agents/Agent B/001/answer.json": goodAnswer}, want: "Agent B"},
		{kind: biSession, name: "vote for a non-agent", files: map[string]string{"agents/agent_b/001/vote.json": `{"voter":"agent_b","target":"../../etc","reason":"r"}`}, absent: `"../../etc": `},
		{kind: biSession, name: "corrupt session.json", files: map[string]string{"session.json": `[1,2`}, want: "session.json"},
		{kind: biSession, name: "symlink out of the session", setup: func(t *testing.T, dir, outside string) {
			biWrite(t, outside, "001/answer.json", `{"agent_id":"agent_x","answer":"stolen","timestamp":"2026-03-20T22:32:03Z"}`)
			biWrite(t, outside, "vote.json", `{"voter":"agent_b","target":"agent_a","reason":"r"}`)
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, "agents", "agent_x")))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "agents", "agent_b", "001"), 0o755))
			require.NoError(t, os.Symlink(filepath.Join(outside, "vote.json"), filepath.Join(dir, "agents", "agent_b", "001", "vote.json")))
		}, absent: "agent_x"},

		// ---- workflow tool arguments from the model ----
		{kind: biArgs, name: "vote bad json", parse: biVote, text: `{"agent_id":`, want: "not valid JSON"},
		{kind: biArgs, name: "vote not an object", parse: biVote, text: `"agent1"`, want: "must be a JSON object"},
		{kind: biArgs, name: "vote unknown field", parse: biVote, text: `{"agent_id":"agent1","reason":"r","confidence":1}`, want: `unknown field "confidence"`},
		{kind: biArgs, name: "vote wrong type", parse: biVote, text: `{"agent_id":1,"reason":"r"}`, want: `field "agent_id" must be a JSON string`},
		{kind: biArgs, name: "vote huge reason", parse: biVote, text: `{"agent_id":"agent1","reason":"` + strings.Repeat("x", tools.MaxReasonBytes+1) + `"}`, want: `field "reason" is`},
		{kind: biArgs, name: "vote id with slashes", parse: biVote, text: `{"agent_id":"agent1/../x","reason":"r"}`, want: `"agent1/../x" is unknown`},
		{kind: biArgs, name: "vote id with NUL", parse: biVote, text: `{"agent_id":"agent1\u0000","reason":"r"}`, want: "is unknown"},
		{kind: biArgs, name: "vote duplicate field", parse: biVote, text: `{"agent_id":"agent1","agent_id":"agent2","reason":"r"}`, want: "more than once"},
		{kind: biArgs, name: "answer unknown field", parse: biAnswer, text: `{"content":"c","Content":"d"}`, want: `unknown field "Content"`},
		{kind: biArgs, name: "answer over limit", parse: biAnswer, text: `{"content":"` + strings.Repeat("y", tools.MaxAnswerBytes+1) + `"}`, want: `field "content" is`},
		{kind: biArgs, name: "answer args over limit", parse: biAnswer, text: `{"content":"` + strings.Repeat("z", 9<<20) + `"}`, want: "byte limit"},
		{kind: biArgs, name: "answer missing", parse: biAnswer, text: `{}`, want: `required field "content"`},
		{kind: biArgs, name: "stop bad status", parse: biStop, text: `{"summary":"s","status":"done"}`, want: `field "status"`},
		{kind: biArgs, name: "stop huge summary", parse: biStop, text: `{"summary":"` + strings.Repeat("s", tools.MaxSummaryBytes+1) + `","status":"complete"}`, want: `field "summary" is`},
		{kind: biArgs, name: "stop trailing text", parse: biStop, text: `{"summary":"s","status":"complete"} {}`, want: "extra text"},

		// ---- workspace tool calls from the model ----
		{kind: biWS, name: "read parent", tool: tools.ReadFile, text: `{"path":"../secret.txt"}`, want: "../secret.txt"},
		{kind: biWS, name: "read absolute", tool: tools.ReadFile, text: `{"path":"/etc/passwd"}`, want: "/etc/passwd"},
		{kind: biWS, name: "read through link", tool: tools.ReadFile, text: `{"path":"link"}`, want: "link"},
		{kind: biWS, name: "write through link", tool: tools.WriteFile, text: `{"path":"link","content":"pwned"}`, want: "link"},
		{kind: biWS, name: "write escaping", tool: tools.WriteFile, text: `{"path":"a/../../secret.txt","content":"pwned"}`, want: "secret.txt"},
		{kind: biWS, name: "write into linked dir", tool: tools.WriteFile, text: `{"path":"linkdir/new.txt","content":"pwned"}`, want: "linkdir"},
		{kind: biWS, name: "list outside", tool: tools.ListFiles, text: `{"path":".."}`, want: ".."},
		{kind: biWS, name: "peer path escaping", tool: tools.ReadFile, text: `{"path":"peers/agent2/../../../secret.txt"}`, want: "secret.txt"},
		{kind: biWS, name: "peer id with slashes", tool: tools.ReadFile, text: `{"path":"peers/agent1/../x"}`, want: `there is no peer "x"`},
		{kind: biWS, name: "unknown peer", tool: tools.ReadFile, text: `{"path":"peers/agent9/x"}`, want: "agent9"},
		{kind: biWS, name: "write to peer", tool: tools.WriteFile, text: `{"path":"peers/agent2/x","content":"y"}`, want: "peers"},
		{kind: biWS, name: "NUL in path", tool: tools.WriteFile, text: `{"path":"a\u0000b","content":"y"}`, want: "write_file"},
		{kind: biWS, name: "write over size", tool: tools.WriteFile, text: `{"path":"big.txt","content":"` + strings.Repeat("b", tools.DefaultMaxFileBytes+1) + `"}`, want: "over the 1048576-byte limit"},
		{kind: biWS, name: "bad json", tool: tools.ListFiles, text: `{"path":`, want: "not valid JSON"},
		{kind: biWS, name: "unknown field", tool: tools.ReadFile, text: `{"path":"a.txt","offset":3}`, want: `unknown field "offset"`},
	}

	// One dev server and worker for every workflow case; a stored session
	// that the bad inputs must leave alone.
	server := testenv.StartTemporal(t)
	storeDir := t.TempDir()
	st, err := storage.NewLocal(storeDir)
	require.NoError(t, err)
	require.NoError(t, st.Put(ctx, "existing/session.json", []byte(`{"agents":["a"]}`)))
	cl := server.Client(t)
	w := worker.New(cl, worker.Options{Store: st, Namespace: "default"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	storeBefore := biSnapshot(t, storeDir)
	bin := conclaveBinary(t)

	counts := map[string]int{}
	for i, c := range cases {
		counts[c.kind]++
		t.Run(c.kind+"/"+c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			switch c.kind {
			case biConfig:
				start := time.Now()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				_, err := config.Parse([]byte(c.text), "team.yaml")
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				require.Error(t, err)
				require.Contains(t, err.Error(), c.want)
				require.Less(t, time.Since(start), 5*time.Second, "parsing took too long")
				require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<20), "parsing allocated too much")
			case biWorkflow:
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				run, err := cl.ExecuteWorkflow(wctx, client.StartWorkflowOptions{
					ID: "badinput-" + strings.ReplaceAll(c.name, " ", "-"), TaskQueue: worker.DefaultTaskQueue,
					WorkflowExecutionTimeout: time.Minute,
				}, contract.CoordinationName, json.RawMessage(c.text))
				require.NoError(t, err)
				err = run.Get(wctx, nil)
				require.Error(t, err, "the workflow must fail")
				require.NotErrorIs(t, err, context.DeadlineExceeded, "the workflow must fail fast")
				var appErr *temporal.ApplicationError
				require.True(t, errors.As(err, &appErr), "%v", err)
				require.True(t, appErr.NonRetryable(), "%v", err)
				require.Contains(t, appErr.Error(), c.want)
				if c.absent != "" {
					require.NotContains(t, err.Error(), c.absent)
				}
				require.Equal(t, storeBefore, biSnapshot(t, storeDir), "a bad input changed the store")
			case biSession:
				dir, outside := t.TempDir(), t.TempDir()
				biWrite(t, dir, "agents/agent_a/001/answer.json", goodAnswer)
				for k, v := range c.files {
					biWrite(t, dir, k, v)
				}
				if c.setup != nil {
					c.setup(t, dir, outside)
				}
				before, beforeOut := biSnapshot(t, dir), biSnapshot(t, outside)
				out, errOut, code := runBin(t, bin, "session", "status", "--session-dir", dir)
				if code == 0 {
					require.True(t, json.Valid([]byte(out)), out)
					require.Contains(t, out, `"agent_a"`, "the good part of the session is still read")
				} else {
					require.Equal(t, 1, code, errOut)
				}
				if c.want != "" {
					require.Contains(t, errOut, c.want)
				}
				if c.absent != "" {
					require.NotContains(t, out, c.absent)
				}
				require.Equal(t, before, biSnapshot(t, dir), "status changed the session")
				require.Equal(t, beforeOut, biSnapshot(t, outside), "status changed files outside the session")
			case biArgs:
				err := c.parse(c.text)
				require.Error(t, err)
				require.Contains(t, err.Error(), c.want)
			case biWS:
				dir := t.TempDir()
				ws := filepath.Join(dir, "ws")
				peer := filepath.Join(dir, "peer")
				biWrite(t, ws, "a.txt", "mine")
				biWrite(t, peer, "x", "theirs")
				biWrite(t, dir, "secret.txt", "SECRET-OUTSIDE-1")
				biWrite(t, dir, "elsewhere/keep.txt", "SECRET-OUTSIDE-2")
				require.NoError(t, os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(ws, "link")))
				require.NoError(t, os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(ws, "linkdir")))
				before := biSnapshot(t, dir)
				wsp := tools.Workspace{Dir: ws, Peers: map[string]string{"agent2": peer}}
				res, handled := wsp.Call(c.tool, c.text)
				require.True(t, handled)
				require.True(t, res.IsError, res.Content)
				require.Contains(t, res.Content, c.want)
				require.NotContains(t, res.Content, "SECRET-OUTSIDE", "content from outside the workspace was returned")
				require.Equal(t, before, biSnapshot(t, dir), "a refused call changed files")
			default:
				t.Fatalf("unknown kind %q in case %d", c.kind, i)
			}
		})
	}
	require.GreaterOrEqual(t, len(cases), 40)
	t.Logf("bad inputs by kind: %v (total %d)", counts, len(cases))
}

// biLaughs is the alias-expansion bomb ("billion laughs"), nine levels of
// nine references, its last level under key.
func biLaughs(key string) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "l0"
	for i := 1; i <= 8; i++ {
		name := "l" + string(rune('0'+i))
		refs := strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",")
		if i == 8 {
			b.WriteString(key + ": &" + name + " [" + refs + "]\n")
		} else {
			b.WriteString(name + ": &" + name + " [" + refs + "]\n")
		}
		prev = name
	}
	return b.String()
}

// biVote is what the agent step does with vote arguments: parse their
// shape, then resolve the target among three anonymous candidates.
func biVote(a string) error {
	id, _, err := tools.ParseVote(a)
	if err != nil {
		return err
	}
	_, err = coord.ParseTarget(id, 3)
	return err
}

func biAnswer(a string) error { _, err := tools.ParseNewAnswer(a); return err }
func biStop(a string) error   { _, _, err := tools.ParseStop(a); return err }

func biWrite(t *testing.T, dir, key, data string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(key))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
}

// biSnapshot maps every entry of a tree to its bytes (a symlink to its
// target, a directory to "dir"), without following links.
func biSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			snap[rel] = "link:" + target
			return err
		case d.IsDir():
			snap[rel] = "dir"
		default:
			data, err := os.ReadFile(p)
			snap[rel] = string(data)
			return err
		}
		return nil
	}))
	return snap
}

//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/mcptest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// npmServers is where make test installs the npm MCP servers; a plain go
// test without it skips the tests that need them.
func npmServers(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CONCLAVE_MCP_NPM")
	if dir == "" {
		t.Skip("the npm MCP servers are not installed: run make mcp-servers and set CONCLAVE_MCP_NPM=.tools/npm (make test does)")
	}
	return dir
}

// serversFile writes a worker's --mcp-servers file: the example Go server
// as "weather" (its calls logged to callLog) and, with npm, the reference
// servers "everything" and "files".
func serversFile(t *testing.T, bin, callLog, npm string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "mcp_servers:\n  - name: weather\n    command: %s\n    args: [tool-server]\n    env: {%s: %s}\n", bin, mcptest.CallLogEnv, callLog)
	if npm != "" {
		fmt.Fprintf(&b, "  - name: everything\n    command: %s\n    args: [stdio]\n", filepath.Join(npm, "node_modules/.bin/mcp-server-everything"))
		fmt.Fprintf(&b, "  - name: files\n    command: %s\n    args: [\".\"]\n", filepath.Join(npm, "node_modules/.bin/mcp-server-filesystem"))
	}
	path := filepath.Join(t.TempDir(), "mcp-servers.yaml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// toolTeam is team() with every agent naming the worker's servers.
func toolTeam(t *testing.T, baseURL string, servers []string, ids ...string) config.Config {
	t.Helper()
	cfg := team(t, baseURL, ids...)
	for i := range cfg.Agents {
		for _, s := range servers {
			cfg.Agents[i].Backend.MCPServers = append(cfg.Agents[i].Backend.MCPServers, config.MCPServer{Name: s})
		}
	}
	return cfg
}

// lastTool is the content of the request's last tool message, if it is
// the last message.
func lastTool(r llmtest.Request) (string, bool) {
	m := r.Last()
	return m.Content, m.Role == "tool"
}

func callArgs(name string, args map[string]any) llmtest.Reply {
	data, _ := json.Marshal(args)
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_" + strings.ReplaceAll(name, "-", "_"), Name: name, Arguments: string(data)}}}
}

// serverProcesses lists the processes whose environment holds the call log
// path: the example servers the worker started.
func serverProcesses(callLog string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains(string(env), mcptest.CallLogEnv+"="+callLog) {
			stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if f := strings.Fields(string(stat)); len(f) > 2 && f[2] != "Z" {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// Agents call MCP tools — the Go example server and, with npm, the
// reference servers nobody here wrote — and answer with the results.
func TestMCPToolsInASession(t *testing.T) {
	npm := npmServers(t)
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	st, url := s3Store(t, minio, "mcp")
	callLog := filepath.Join(t.TempDir(), "calls.jsonl")

	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		agent := agentOf(r.Model)
		result, afterTool := lastTool(r)
		switch {
		case strings.Contains(r.Messages[0].Content, "present the final answer"):
			return call("new_answer", map[string]string{"content": "FINAL: " + r.Messages[len(r.Messages)-1].Content})
		case r.HasTool("vote") && r.Contains("<agent1."):
			return call("vote", map[string]string{"agent_id": "agent1", "reason": "it has the forecast"})
		case r.HasTool("vote") && r.Contains("<agent2."):
			return call("vote", map[string]string{"agent_id": "agent2", "reason": "the only answer so far"})
		case agent == "agent_a" && !afterTool:
			return callArgs("mcp__weather__get_weather", map[string]any{"city": "Lyon"})
		case agent == "agent_a":
			return call("new_answer", map[string]string{"content": "A says: " + result})
		case agent == "agent_b" && !afterTool:
			return callArgs("mcp__everything__echo", map[string]any{"message": "hello from B"})
		case agent == "agent_b" && !r.Contains("Successfully wrote"):
			return callArgs("mcp__files__write_file", map[string]any{"path": "note.txt", "content": "B's note: " + result})
		default:
			return call("new_answer", map[string]string{"content": "B wrote note.txt"})
		}
	}))
	startWorker(t, bin, temporal.HostPort, url, "--mcp-servers", serversFile(t, bin, callLog, npm))
	c := temporal.Client(t)
	ctx := context.Background()
	cfg := toolTeam(t, srv.URL(), []string{"weather", "everything", "files"}, "agent_a", "agent_b")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "mcp-1", TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "What is the weather in Lyon?", Config: cfg})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	var res workflows.CoordinationResult
	require.NoError(t, run.Get(wctx, &res))
	assert.Equal(t, "agent_a", res.Winner)
	assert.Contains(t, res.FinalAnswer, mcptest.Forecast("Lyon"), "the answer uses the tool's result")

	sess := storage.Sub(st, "mcp-1")
	note, err := sess.Get(ctx, "agents/agent_b/001/workspace/note.txt")
	require.NoError(t, err, "the filesystem server wrote into the agent's workspace")
	assert.Contains(t, string(note), "hello from B", "server-everything's echo reached the next call")
	trace, err := sess.Get(ctx, "agents/agent_a/001/trace.jsonl")
	require.NoError(t, err)
	assert.Contains(t, string(trace), `"tool_stats":{"mcp__weather__get_weather":{"calls":1`)

	calls, err := mcptest.ReadCallLog(callLog)
	require.NoError(t, err)
	require.Len(t, calls, 1)
	assert.Len(t, calls[0].Key, 32, "the call carries its idempotency key")
	assert.Eventually(t, func() bool { return len(serverProcesses(callLog)) == 0 }, 10*time.Second, 100*time.Millisecond,
		"no server outlives its step")
}

// oneToolAgent is the model of a one-agent session whose step calls tool
// with args, then answers; it votes for itself and presents.
func oneToolAgent(tool string, args map[string]any) llmtest.Rule {
	return llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		_, afterTool := lastTool(r)
		switch {
		case strings.Contains(r.Messages[0].Content, "present the final answer"):
			return call("new_answer", map[string]string{"content": "FINAL"})
		case r.HasTool("vote") && r.Contains("<agent1."):
			return call("vote", map[string]string{"agent_id": "agent1", "reason": "ok"})
		case !afterTool:
			return callArgs(tool, args)
		default:
			return call("new_answer", map[string]string{"content": "answered after " + tool})
		}
	})
}

// killSession runs a one-agent session with the weather server on a worker
// process that the test kills; it returns what the test needs to kill it,
// start the next one and wait for the end.
type killSession struct {
	bin, address, url, servers, callLog string
	first                               *exec.Cmd
	run                                 client.WorkflowRun
}

func startKillSession(t *testing.T, id string, rules ...llmtest.Rule) *killSession {
	t.Helper()
	k := &killSession{bin: conclaveBinary(t), callLog: filepath.Join(t.TempDir(), "calls.jsonl")}
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	_, k.url = s3Store(t, minio, id)
	k.address = temporal.HostPort
	srv := llmtest.Start(t, rules...)
	k.servers = serversFile(t, k.bin, k.callLog, "")
	k.first = startWorker(t, k.bin, k.address, k.url, "--mcp-servers", k.servers)
	cfg := toolTeam(t, srv.URL(), []string{"weather"}, "agent_a")
	var err error
	k.run, err = temporal.Client(t).ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "Weather in Lyon?", Config: cfg, StepHeartbeatSeconds: 3})
	require.NoError(t, err)
	return k
}

// replace SIGKILLs the first worker, checks its servers died with it, and
// starts another; then it waits for the session to end.
func (k *killSession) replace(t *testing.T) {
	t.Helper()
	require.NoError(t, syscall.Kill(-k.first.Process.Pid, syscall.SIGKILL))
	_ = k.first.Wait()
	assert.Eventually(t, func() bool { return len(serverProcesses(k.callLog)) == 0 }, 10*time.Second, 50*time.Millisecond,
		"the server died with its SIGKILLed worker")
	startWorker(t, k.bin, k.address, k.url, "--mcp-servers", k.servers)
	wctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, k.run.Get(wctx, nil))
}

// The worker is SIGKILLed after a tool call completed and before the next
// model reply: the new worker resumes the step without calling the tool
// again, and the killed worker's server died with it.
func TestWorkerKilledAfterToolCall(t *testing.T) {
	inFlight := make(chan struct{}, 1)
	afterForecast := func(r llmtest.Request) bool {
		res, ok := lastTool(r)
		return ok && strings.Contains(res, "Forecast for Lyon")
	}
	k := startKillSession(t, "mcpkill",
		llmtest.Func(func(llmtest.Request) llmtest.Reply {
			inFlight <- struct{}{}
			return llmtest.Reply{Delay: 10 * time.Minute}
		}).If(afterForecast).Once(),
		oneToolAgent("mcp__weather__get_weather", map[string]any{"city": "Lyon"}))
	select {
	case <-inFlight:
	case <-time.After(2 * time.Minute):
		t.Fatal("the model call after the tool call never arrived")
	}
	require.Len(t, serverProcesses(k.callLog), 1, "the step's server runs")
	k.replace(t)
	calls, err := mcptest.ReadCallLog(k.callLog)
	require.NoError(t, err)
	assert.Len(t, calls, 1, "a completed tool call is never made again")
}

// The worker is SIGKILLed during a slow call: the call runs again once,
// with the same idempotency key, and the step completes.
func TestWorkerKilledDuringToolCall(t *testing.T) {
	k := startKillSession(t, "mcpslow", oneToolAgent("mcp__weather__slow", map[string]any{"seconds": 6}))
	require.Eventually(t, func() bool {
		calls, _ := mcptest.ReadCallLog(k.callLog)
		return len(calls) == 1
	}, 2*time.Minute, 50*time.Millisecond, "the slow call never started")
	k.replace(t)
	calls, err := mcptest.ReadCallLog(k.callLog)
	require.NoError(t, err)
	require.Len(t, calls, 2, "the call in flight ran once more")
	assert.Equal(t, calls[0].Key, calls[1].Key, "with the same idempotency key")
}

// A workflow started by hand with `temporal workflow start`, whose config
// defines an inline stdio server, is refused by a worker without the
// opt-in: the program never runs and the session is never created.
func TestInlineServerRefusedWithoutOptIn(t *testing.T) {
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	st, url := s3Store(t, minio, "inline")
	startWorker(t, bin, temporal.HostPort, url)
	marker := filepath.Join(t.TempDir(), "pwned")
	cfg := team(t, "http://127.0.0.1:9/v1", "agent_a")
	cfg.Agents[0].Backend.MCPServers = []config.MCPServer{{Name: "evil", Type: config.MCPStdio, Command: "sh", Args: []string{"-c", "touch " + marker}}}
	input, err := json.Marshal(workflows.CoordinationInput{Task: "hello", Config: cfg})
	require.NoError(t, err)
	cli := exec.Command(os.Getenv("CONCLAVE_TEMPORAL_BIN"), "workflow", "start", "--address", temporal.HostPort,
		"--task-queue", worker.DefaultTaskQueue, "--type", contract.CoordinationName, "--workflow-id", "inline-1", "--input", string(input))
	out, err := cli.CombinedOutput()
	require.NoError(t, err, "%s", out)

	c := temporal.Client(t)
	wctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = c.GetWorkflow(wctx, "inline-1", "").Get(wctx, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `MCP server "evil"`)
	assert.Contains(t, err.Error(), "--mcp-servers")
	assert.NoFileExists(t, marker)
	keys, err := st.List(context.Background(), "inline-1/")
	require.NoError(t, err)
	assert.Empty(t, keys, "nothing of the session is stored")
}

// MassGen's single-agent config with a stdio weather server validates and
// runs, the server replaced by the local stand-in, on a worker that allows
// inline servers (as conclave dev does) and shares the server's key
// variable: the answer uses the forecast.
func TestMassGenWeatherConfig(t *testing.T) {
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	_, url := s3Store(t, minio, "mgweather")
	callLog := filepath.Join(t.TempDir(), "calls.jsonl")
	cfg, err := config.Load(filepath.Join(testenv.ModuleRoot(t), "engine/config/testdata/massgen/single_claude_mcp.yaml"))
	require.NoError(t, err)
	b := &cfg.Agents[0].Backend
	require.Len(t, b.MCPServers, 1)
	require.Equal(t, "weather", b.MCPServers[0].Name)
	srv := llmtest.Start(t, oneToolAgent("mcp__weather__get_weather", map[string]any{"city": "Lyon"}))
	b.Type, b.BaseURL, b.APIKeyEnv = "openai", srv.URL(), ""
	b.MCPServers[0].Command, b.MCPServers[0].Args = "conclave", []string{"tool-server"}
	b.MCPServers[0].Env[mcptest.CallLogEnv] = callLog
	t.Setenv("BRAVE_API_KEY", "brave-test-key")
	startWorker(t, bin, temporal.HostPort, url, "--allow-inline-mcp-servers", "--allow-key-env", "BRAVE_API_KEY")

	c := temporal.Client(t)
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "mgweather-1", TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "Weather in Lyon?", Config: *cfg})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var res workflows.CoordinationResult
	require.NoError(t, run.Get(wctx, &res))
	calls, err := mcptest.ReadCallLog(callLog)
	require.NoError(t, err)
	require.Len(t, calls, 1)
	assert.Equal(t, "get_weather", calls[0].Tool)
	sawForecast := false
	for _, r := range srv.Requests() {
		result, ok := lastTool(r)
		sawForecast = sawForecast || (ok && strings.Contains(result, mcptest.Forecast("Lyon")))
	}
	assert.True(t, sawForecast, "the model was given the stand-in's forecast")
}

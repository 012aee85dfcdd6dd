package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/internal/mcptest"
)

// The test binary is also the test server: run with serveEnv set, it
// serves internal/mcptest on stdio instead of running tests.
const serveEnv = "CONCLAVE_MCPTEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		_ = mcptest.Serve(context.Background())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testServer is the test server as a stdio entry, logging its calls.
func testServer(t *testing.T, name string) (Server, string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	return Server{MCPServer: config.MCPServer{Name: name, Type: config.MCPStdio, Command: self,
		Env: map[string]string{serveEnv: "1", mcptest.CallLogEnv: log}}, Operator: true}, log
}

func open(t *testing.T, o Options, servers ...Server) *Toolbox {
	t.Helper()
	if o.Workspace == "" {
		o.Workspace = t.TempDir()
	}
	tb, err := Open(context.Background(), servers, o)
	require.NoError(t, err)
	t.Cleanup(tb.Close)
	return tb
}

func TestIdempotencyKeyFieldAgrees(t *testing.T) {
	assert.Equal(t, IdempotencyKey, mcptest.IdempotencyKey)
}

// Tools reach the model under MassGen's names with their schemas, and a
// call carries its idempotency key to the server.
func TestStdioServerCall(t *testing.T) {
	t.Parallel()
	srv, log := testServer(t, "weather")
	tb := open(t, Options{Excluded: []string{"mcp__weather__crash"}}, srv)
	var names []string
	for _, s := range tb.Specs() {
		names = append(names, s.Name)
		if s.Name == "mcp__weather__get_weather" {
			assert.Contains(t, s.Parameters["properties"], "city")
		}
	}
	assert.Contains(t, names, "mcp__weather__get_weather")
	assert.NotContains(t, names, "mcp__weather__crash", "exclude_tools")
	assert.False(t, tb.Has("mcp__weather__crash"))

	res := tb.Call(context.Background(), agent.Call{Name: "mcp__weather__get_weather", Arguments: `{"city":"Lyon"}`, Key: "k1"})
	require.False(t, res.IsError, res.Content)
	assert.Equal(t, mcptest.Forecast("Lyon"), res.Content)
	calls, err := mcptest.ReadCallLog(log)
	require.NoError(t, err)
	require.Len(t, calls, 1)
	assert.Equal(t, "k1", calls[0].Key)

	res = tb.Call(context.Background(), agent.Call{Name: "mcp__weather__get_weather", Arguments: `{"city":""}`})
	assert.True(t, res.IsError, "a tool error is an error result")
	res = tb.Call(context.Background(), agent.Call{Name: "mcp__weather__get_weather", Arguments: `not json`})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "not a JSON object")
}

func TestAllowedTools(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t, "w")
	tb := open(t, Options{Allowed: []string{"mcp__w__echo"}}, srv)
	require.Len(t, tb.Specs(), 1)
	assert.Equal(t, "mcp__w__echo", tb.Specs()[0].Name)
}

// A server that dies mid-call answers the model with a tool error naming
// it; its tools are refused for the rest of the step, others still work.
func TestCrashIsAToolError(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t, "flaky")
	other, _ := testServer(t, "steady")
	tb := open(t, Options{}, srv, other)
	res := tb.Call(context.Background(), agent.Call{Name: "mcp__flaky__crash", Arguments: `{}`})
	require.True(t, res.IsError)
	assert.Contains(t, res.Content, `MCP server "flaky" stopped during the call`)
	res = tb.Call(context.Background(), agent.Call{Name: "mcp__flaky__echo", Arguments: `{"text":"hi"}`})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "stopped earlier in this step")
	res = tb.Call(context.Background(), agent.Call{Name: "mcp__steady__echo", Arguments: `{"text":"hi"}`})
	assert.False(t, res.IsError, res.Content)
	assert.Equal(t, "hi", res.Content)
}

// A hung call ends at the per-call timeout, and its server process with it.
func TestHangTimesOutAndStopsTheServer(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t, "h")
	tb := open(t, Options{Timeout: 500 * time.Millisecond}, srv)
	res := tb.Call(context.Background(), agent.Call{Name: "mcp__h__hang", Arguments: `{}`})
	require.True(t, res.IsError)
	assert.Contains(t, res.Content, "did not answer within 500ms")
	pid := tb.servers[0].proc.cmd.Process.Pid
	assert.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 10*time.Second, 50*time.Millisecond, "the hung server is killed")
}

// A JSON-RPC level failure is a tool error too.
func TestFailingToolIsAToolError(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t, "f")
	tb := open(t, Options{}, srv)
	res := tb.Call(context.Background(), agent.Call{Name: "mcp__f__fail", Arguments: `{}`})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "failed on purpose")
}

// Images are stored in the workspace and referenced.
func TestImageGoesToTheWorkspace(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t, "img")
	ws := t.TempDir()
	tb := open(t, Options{Workspace: ws}, srv)
	res := tb.Call(context.Background(), agent.Call{Name: "mcp__img__image", Arguments: `{}`, Key: "abcdef0123456789"})
	require.False(t, res.IsError, res.Content)
	assert.Contains(t, res.Content, "stored in your workspace as tool-output/img__image-abcdef01-1.png")
	data, err := os.ReadFile(filepath.Join(ws, "tool-output", "img__image-abcdef01-1.png"))
	require.NoError(t, err)
	assert.Equal(t, mcptest.PNG, data)
}

// A 10 MB result is received whole (under the frame limit) and left to
// the engine's one result cap.
func TestBigResult(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t, "b")
	tb := open(t, Options{}, srv)
	res := tb.Call(context.Background(), agent.Call{Name: "mcp__b__big", Arguments: `{}`})
	require.False(t, res.IsError)
	assert.Len(t, res.Content, 10<<20)
	res = tb.Call(context.Background(), agent.Call{Name: "mcp__b__big", Arguments: `{"bytes":20000000}`})
	assert.True(t, res.IsError, "a frame over the limit fails the call")
}

// A server that cannot start fails with its name; nothing keeps running.
func TestStartFailureNamesTheServer(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), []Server{{MCPServer: config.MCPServer{Name: "ghost", Command: "/nonexistent/server"}}}, Options{Workspace: t.TempDir()})
	var se *StartError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "ghost", se.Server)
	assert.Contains(t, err.Error(), `MCP server "ghost" could not start`)

	_, err = Open(context.Background(), []Server{{MCPServer: config.MCPServer{Name: "mute", Command: "sh", Args: []string{"-c", "echo no mcp here >&2; exit 1"}}}}, Options{Workspace: t.TempDir()})
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "no mcp here")
}

// Close ends the server's whole process group, what it started included.
func TestCloseKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	srv, _ := testServer(t, "g")
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	srv.Command, srv.Args = "sh", []string{"-c", "sleep 300 & echo $! > " + pidFile + "; exec \"$SELF\""}
	srv.Env["SELF"] = srv.Env[serveEnv]
	self, _ := os.Executable()
	srv.Env["SELF"] = self
	tb, err := Open(context.Background(), []Server{srv}, Options{Workspace: t.TempDir()})
	require.NoError(t, err)
	data, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	var child int
	_, err = fmtSscan(strings.TrimSpace(string(data)), &child)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(child, 0), "the server's own child runs")
	tb.Close()
	assert.Eventually(t, func() bool { return !alive(child) }, 5*time.Second, 50*time.Millisecond, "the server's child is gone with it")
}

// A server cannot offer a tool whose name a provider would refuse, nor
// swell every request with its description.
func TestToolNamesAndDescriptionsAreBounded(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "odd", Version: "1"}, nil)
	handler := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{}, nil
	}
	obj := map[string]any{"type": "object"}
	s.AddTool(&sdk.Tool{Name: "has space", InputSchema: obj}, handler)
	s.AddTool(&sdk.Tool{Name: "wordy", Description: strings.Repeat("é", 10000), InputSchema: obj}, handler)
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	tb := open(t, Options{}, Server{MCPServer: config.MCPServer{Name: "odd", URL: srv.URL}, Operator: true})
	require.Len(t, tb.Specs(), 1)
	assert.Equal(t, "mcp__odd__wordy", tb.Specs()[0].Name)
	assert.LessOrEqual(t, len(tb.Specs()[0].Description), maxDescriptionBytes)
}

// A streamable HTTP server is called with its headers, ${VAR} read from
// the worker's environment.
func TestStreamableHTTPServer(t *testing.T) {
	t.Parallel()
	var gotAuth atomic.Value
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcptest.NewServer("") }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth.Store(r.Header.Get("Authorization"))
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s := Server{MCPServer: config.MCPServer{Name: "remote", Type: config.MCPStreamableHTTP, URL: srv.URL,
		Headers: map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}"}}, Operator: true}
	tb := open(t, Options{Getenv: func(k string) string { return map[string]string{"REMOTE_TOKEN": "t0k"}[k] }}, s)
	res := tb.Call(context.Background(), agent.Call{Name: "mcp__remote__get_weather", Arguments: `{"city":"Oslo"}`})
	require.False(t, res.IsError, res.Content)
	assert.Equal(t, mcptest.Forecast("Oslo"), res.Content)
	assert.Equal(t, "Bearer t0k", gotAuth.Load())

	// A session's own server obeys the worker's host rule.
	rule, err := config.NewEgress(nil, []string{"mcp.example.com"})
	require.NoError(t, err)
	s.Operator = false
	_, err = Open(context.Background(), []Server{s}, Options{Workspace: t.TempDir(), Egress: rule})
	assert.ErrorContains(t, err, `MCP server "remote" could not start`)
	_, err = Open(context.Background(), []Server{{MCPServer: config.MCPServer{Name: "meta", URL: "http://169.254.169.254/mcp"}, Operator: true}}, Options{Workspace: t.TempDir()})
	assert.Error(t, err, "metadata addresses are never called")
}

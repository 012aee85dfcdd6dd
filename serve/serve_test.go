package serve

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/workflows"
)

const teamYAML = "agents:\n  - id: a\n    backend: {type: openai, model: m, base_url: http://127.0.0.1:9/v1}\n"

// testServer is a Server without Temporal: enough for everything decided
// before a run starts (auth, limits, validation, unknown models).
func testServer(t *testing.T, keys ...Key) *Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "team.yaml")
	require.NoError(t, os.WriteFile(path, []byte(teamYAML), 0o600))
	team, _, err := LoadTeam(path)
	require.NoError(t, err)
	s := &Server{opts: Options{MaxRequestBytes: 1 << 10, MaxMessages: 3, MaxRunsPerKey: 1, MaxRuns: 2, MaxStreamsPerKey: 1, Teams: []Team{team}},
		dc: converter.GetDefaultDataConverter(), teams: map[string]Team{team.Name: team}, log: slog.New(slog.DiscardHandler), running: map[string]map[string]bool{}, streams: map[string]int{}}
	for _, k := range keys {
		s.keys = append(s.keys, keyHash{name: k.Name, sum: sha256.Sum256([]byte(k.Secret))})
	}
	return s
}

func do(t *testing.T, h http.Handler, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var v map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v), rec.Body.String())
	return rec.Code, v
}

func errMessage(v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

func TestRequestsRefusedBeforeAnyRun(t *testing.T) {
	alice := Key{Name: "alice", Secret: "sk-0123456789abcdef"}
	h := testServer(t, alice).Handler()
	msg := func(n int) string {
		return `{"model":"team","messages":[` + strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"hi"},`, n), ",") + `]}`
	}
	for _, tc := range []struct {
		name, key, path, body string
		status                int
		says                  string
	}{
		{"no key", "", "/v1/chat/completions", msg(1), 401, "API key"},
		{"wrong key", "sk-0123456789abcdeX", "/v1/chat/completions", msg(1), 401, "API key"},
		{"key prefix", "sk-0123456789abcde", "/v1/models", "", 401, "API key"},
		{"too large", alice.Secret, "/v1/chat/completions", `{"model":"team","messages":[{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}]}`, 413, "limit of 1024 bytes"},
		{"too many messages", alice.Secret, "/v1/chat/completions", msg(4), 400, "limit of 3"},
		{"unknown model", alice.Secret, "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, 404, `model "nope" does not exist`},
		{"storage", alice.Secret, "/v1/chat/completions", `{"model":"team","storage":"s3://x","messages":[{"role":"user","content":"hi"}]}`, 400, "storage cannot be set"},
		{"tools", alice.Secret, "/v1/responses", `{"model":"team","input":"hi","tools":[]}`, 400, "tools cannot be set"},
		{"last not user", alice.Secret, "/v1/chat/completions", `{"model":"team","messages":[{"role":"assistant","content":"hi"}]}`, 400, "last message"},
		{"image", alice.Secret, "/v1/chat/completions", `{"model":"team","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "only text"},
		{"tool calls", alice.Secret, "/v1/chat/completions", `{"model":"team","messages":[{"role":"user","content":"x","tool_calls":[]}]}`, 400, "tool_calls is not supported"},
		{"max_tokens", alice.Secret, "/v1/chat/completions", `{"model":"team","max_tokens":0.5,"messages":[{"role":"user","content":"hi"}]}`, 400, "max_tokens has the wrong type"},
		{"max_tokens 0", alice.Secret, "/v1/chat/completions", `{"model":"team","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, 400, "max_tokens must be between 1 and"},
		{"max_completion_tokens 0", alice.Secret, "/v1/chat/completions", `{"model":"team","max_completion_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, 400, "max_completion_tokens must be between 1 and"},
		{"max_output_tokens 0", alice.Secret, "/v1/responses", `{"model":"team","max_output_tokens":0,"input":"hi"}`, 400, "max_output_tokens must be between 1 and"},
		{"store false", alice.Secret, "/v1/responses", `{"model":"team","input":"hi","store":false}`, 400, "store cannot be false"},
		{"n", alice.Secret, "/v1/chat/completions", `{"model":"team","n":2,"messages":[{"role":"user","content":"hi"}]}`, 400, "n must be 1"},
		{"not json", alice.Secret, "/v1/responses", `[1]`, 400, "not a JSON object"},
		{"no input", alice.Secret, "/v1/responses", `{"model":"team"}`, 400, "input is required"},
		{"bad id", alice.Secret, "/v1/responses/a%2Fb", "", 404, "no response"},
		{"unknown path", alice.Secret, "/v1/embeddings", "", 404, "not an endpoint"},
		{"wrong method", alice.Secret, "/v1/chat/completions", "", 405, "does not answer GET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodPost
			if tc.body == "" {
				method = http.MethodGet
			}
			status, v := do(t, h, method, tc.path, tc.key, tc.body)
			require.Equal(t, tc.status, status, v)
			require.Contains(t, errMessage(v), tc.says)
		})
	}
	status, v := do(t, h, http.MethodGet, "/v1/models", alice.Secret, "")
	require.Equal(t, 200, status)
	status, _ = do(t, h, http.MethodGet, "/v1/models", "", "")
	require.Equal(t, 401, status)
	req := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	req.Header.Set("Authorization", "bearer "+alice.Secret)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code, "the scheme is case-insensitive")
	require.Equal(t, "team", v["data"].([]any)[0].(map[string]any)["id"])
}

func TestErrorsDoNotEchoWithoutBound(t *testing.T) {
	alice := Key{Name: "alice", Secret: "sk-0123456789abcdef"}
	s := testServer(t, alice)
	s.opts.MaxRequestBytes = 1 << 20
	h := s.Handler()
	long := strings.Repeat("é", 100<<10)
	var fields strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&fields, `"f%05d":1,`, i)
	}
	for name, body := range map[string]string{
		"model":          `{"model":"` + long + `","messages":[{"role":"user","content":"hi"}]}`,
		"unknown fields": `{` + fields.String() + `"model":"team","messages":[{"role":"user","content":"hi"}]}`,
		"long field":     `{"` + long + `":1,"model":"team","messages":[{"role":"user","content":"hi"}]}`,
		"role":           `{"model":"team","messages":[{"role":"` + long + `","content":"hi"}]}`,
		"type":           `{"model":"team","messages":[{"type":"` + long + `","role":"user","content":"hi"}]}`,
		"part type":      `{"model":"team","messages":[{"role":"user","content":[{"type":"` + long + `"}]}]}`,
		"message field":  `{"model":"team","messages":[{"role":"user","content":"hi","` + long + `":1}]}`,
	} {
		status, v := do(t, h, http.MethodPost, "/v1/chat/completions", alice.Secret, body)
		require.Contains(t, []int{400, 404}, status, name)
		msg := errMessage(v)
		require.Less(t, len(msg), 1000, "%s: %s", name, msg)
		require.True(t, utf8.ValidString(msg), name)
		if name == "unknown fields" {
			require.Contains(t, msg, "f00000, f00001, f00002, f00003, f00004, and 4995 more")
		}
	}
	status, v := do(t, h, http.MethodGet, "/v1/responses/"+strings.Repeat("a", 100<<10), alice.Secret, "")
	require.Equal(t, 404, status)
	require.Less(t, len(errMessage(v)), 1000)
}

func TestOneKeyUnderTwoNamesIsRefused(t *testing.T) {
	_, err := ParseKeys("alice:sk-0123456789abcdef\nbob:sk-0123456789abcdef", "file")
	require.ErrorContains(t, err, `API keys "alice" and "bob" are the same key`)
	_, err = New(context.Background(), Options{Client: &refusingClient{}, TaskQueue: "q", Teams: testServer(t).opts.Teams,
		Keys: []Key{{"alice", "sk-0123456789abcdef"}, {"bob", "sk-0123456789abcdef"}}})
	require.ErrorContains(t, err, "same key")
}

func TestCaps(t *testing.T) {
	s := testServer(t)
	require.NoError(t, s.acquire("a", "r1"))
	err := s.acquire("a", "r2")
	require.ErrorContains(t, err, "this API key has 1 runs in progress")
	require.Equal(t, http.StatusTooManyRequests, err.(*apiError).status)
	require.NoError(t, s.acquire("b", "r3"))
	err = s.acquire("c", "r4")
	require.Equal(t, http.StatusServiceUnavailable, err.(*apiError).status)
	s.release("a", "r1")
	require.NoError(t, s.acquire("a", "r5"))

	done, err := s.follow("a")
	require.NoError(t, err)
	_, err = s.follow("a")
	require.ErrorContains(t, err, "1 streams or waiting requests open")
	_, err = s.follow("b")
	require.NoError(t, err, "another key has its own")
	done()
	_, err = s.follow("a")
	require.NoError(t, err)
}

func TestCheckListen(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:4000": true, "localhost:4000": true, "[::1]:4000": true,
		"0.0.0.0:4000": false, ":4000": false, "192.168.1.5:4000": false, "example.com:4000": false} {
		err := CheckListen(addr, false)
		require.Equal(t, ok, err == nil, "%s: %v", addr, err)
		require.NoError(t, CheckListen(addr, true))
	}
}

func TestParseKeys(t *testing.T) {
	keys, err := ParseKeys("alice:sk-0123456789abcdef, sk-fedcba9876543210\n# comment\nbob:sk-bbbbbbbbbbbbbbbb", "env")
	require.NoError(t, err)
	require.Equal(t, []Key{{"alice", "sk-0123456789abcdef"}, {"key2", "sk-fedcba9876543210"}, {"bob", "sk-bbbbbbbbbbbbbbbb"}}, keys)
	_, err = ParseKeys("alice:short", "env")
	require.ErrorContains(t, err, "shorter than 16")
	_, err = ParseKeys("al ice:sk-0123456789abcdef", "env")
	require.ErrorContains(t, err, "name")
}

func TestLoadTeamNames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "research.yaml")
	require.NoError(t, os.WriteFile(path, []byte(teamYAML), 0o600))
	team, _, err := LoadTeam(path)
	require.NoError(t, err)
	require.Equal(t, "research", team.Name)
	team, _, err = LoadTeam("writers=" + path)
	require.NoError(t, err)
	require.Equal(t, "writers", team.Name)

	named := filepath.Join(dir, "x.yaml")
	require.NoError(t, os.WriteFile(named, []byte("name: crew\n"+teamYAML+"  - id: b\n    backend: {type: nope}\n"), 0o600))
	_, _, err = LoadTeam(named)
	require.ErrorContains(t, err, "x.yaml:6", "line numbers still point into the file")
	require.NoError(t, os.WriteFile(named, []byte("name: crew\n"+teamYAML), 0o600))
	team, _, err = LoadTeam(named)
	require.NoError(t, err)
	require.Equal(t, "crew", team.Name)
}

func TestTask(t *testing.T) {
	one, err := task([]message{{Role: "user", Content: "hello"}})
	require.NoError(t, err)
	require.Equal(t, "hello", one)
	follow, err := task([]message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "q1"}, {Role: "assistant", Content: "a1"}, {Role: "user", Content: "q2"}})
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(follow, "The current request:\n\nq2"), follow)
	for _, part := range []string{"[system]\nbe brief", "[user]\nq1", "[assistant]\na1"} {
		require.Contains(t, follow, part)
	}
}

// history builds the events of a small run: two steps, a presentation,
// the result, as the Coordination workflow records them.
func history(t *testing.T) []*historypb.HistoryEvent {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	payloads := func(v any) *commonpb.Payloads {
		p, err := dc.ToPayloads(v)
		require.NoError(t, err)
		return p
	}
	sched := func(id int64, name string, in any) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
			Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityType: &commonpb.ActivityType{Name: name}, Input: payloads(in)}}}
	}
	done := func(id, scheduled int64, res any) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
			Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
				ScheduledEventId: scheduled, Result: payloads(res)}}}
	}
	usage := coord.Usage{InputTokens: 10, OutputTokens: 2}
	return []*historypb.HistoryEvent{
		{EventId: 1, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED},
		sched(5, contract.NameInitSession, contract.InitSessionInput{}),
		done(6, 5, contract.InitSessionResult{}),
		sched(7, contract.NameAgentStep, contract.AgentStepInput{Agent: "a", Step: 1}),
		sched(8, contract.NameAgentStep, contract.AgentStepInput{Agent: "b", Step: 1}),
		done(9, 8, contract.AgentStepResult{Agent: "b", Step: 1, Action: coord.ActionNewAnswer, Label: "agent2.1", AnswerPreview: "B's\nanswer", Usage: usage}),
		done(10, 7, contract.AgentStepResult{Agent: "a", Step: 1, Action: coord.ActionVote, Target: "b", Reason: "better", Usage: usage}),
		sched(11, contract.NamePresent, contract.PresentInput{Presenter: "b"}),
		done(12, 11, contract.PresentResult{Presenter: "b", Answer: "final", Usage: usage}),
		{EventId: 13, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, Attributes: &historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes{
			WorkflowExecutionCompletedEventAttributes: &historypb.WorkflowExecutionCompletedEventAttributes{Result: payloads(workflows.CoordinationResult{
				Status: "consensus", Winner: "b", FinalAnswer: "final", Votes: map[string]int{"b": 1}, Usage: coord.Usage{InputTokens: 30, OutputTokens: 6}})}}},
	}
}

func TestTrackerLinesComeFromHistoryAlone(t *testing.T) {
	read := func(events []*historypb.HistoryEvent) (*tracker, []string) {
		tr := newTracker(converter.GetDefaultDataConverter())
		lines := []string{}
		for _, ev := range events {
			if p := tr.add(ev); p != nil {
				lines = append(lines, p.Text)
			}
		}
		return tr, lines
	}
	events := history(t)
	tr, lines := read(events)
	require.Equal(t, []string{
		"a is working (step 1)\n", "b is working (step 1)\n", "b answered (agent2.1): B's answer\n",
		"a voted for b: better\n", "b is presenting the final answer\n"}, lines)
	require.Equal(t, "completed", tr.end.state)
	require.Equal(t, "final", tr.finalText())
	require.Equal(t, coord.Usage{InputTokens: 30, OutputTokens: 6}, tr.total(), "a completed run's usage is the result's")
	require.Equal(t, []answerRef{{Label: "agent2.1", Agent: "b", Step: 1}}, tr.metadata("r").Answers)

	// Every prefix of the history gives a prefix of the lines: a reader
	// that comes back later sees the same numbering.
	for n := range events {
		part, partLines := read(events[:n])
		require.Equal(t, lines[:len(partLines)], partLines)
		if n < len(events) {
			require.Nil(t, part.end)
		}
	}
	running, _ := read(events[:6])
	require.Equal(t, coord.Usage{InputTokens: 10, OutputTokens: 2}, running.total(), "in progress: the steps recorded so far")
}

// signalWriter tells each write, so a test waits on a write, not a clock.
type signalWriter struct {
	*httptest.ResponseRecorder
	wrote chan string
}

func (w signalWriter) Write(b []byte) (int, error) {
	w.wrote <- string(b)
	return w.ResponseRecorder.Write(b)
}

func TestKeepAliveOnAnIdleStream(t *testing.T) {
	w := signalWriter{httptest.NewRecorder(), make(chan string, 16)}
	e := newSSE(w)
	stop := e.keepAlive(time.Millisecond)
	require.Equal(t, ": keep-alive\n\n", <-w.wrote)
	stop()
	require.NoError(t, e.send(map[string]int{"n": 1}))
	require.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
	require.True(t, strings.HasSuffix(w.Body.String(), "data: {\"n\":1}\n\n"))
	require.Equal(t, 200, w.Code)
}

// FuzzParseMessages: whatever a client sends, the parser returns a clear
// error or a conversation that ends in a non-empty user message and fits
// the limit, and a task built from it is never larger than a task may be.
func FuzzParseMessages(f *testing.F) {
	for _, seed := range []string{
		`[{"role":"user","content":"hi"}]`,
		`[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"input_text","text":"b"}]}]`,
		`[{"role":"tool","content":"x"}]`, `[]`, `{}`, `[{"role":"user","content":null}]`, `[{"type":"function_call"}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		conv, err := parseMessages(data, "messages", 8)
		if err != nil {
			var e *apiError
			require.ErrorAs(t, err, &e)
			require.NotEmpty(t, e.msg)
			return
		}
		require.LessOrEqual(t, len(conv), 8)
		last := conv[len(conv)-1]
		require.Equal(t, "user", last.Role)
		require.NotEmpty(t, strings.TrimSpace(last.Content))
		if text, err := task(conv); err == nil {
			require.LessOrEqual(t, len(text), contract.MaxTaskBytes)
			require.True(t, strings.HasSuffix(text, last.Content))
		}
	})
}

// rawRequest sends head (request line and headers, no body) on a fresh
// connection and returns what the server answers within limit, and how
// long it took to answer or close.
func rawRequest(t *testing.T, addr, head string, limit time.Duration) (string, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	start := time.Now()
	_, err = io.WriteString(conn, head)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(start.Add(limit)))
	got, _ := io.ReadAll(conn)
	return string(got), time.Since(start)
}

func TestBodyNeverSentIsNotWaitedFor(t *testing.T) {
	alice := Key{Name: "alice", Secret: "sk-0123456789abcdef"}
	s := testServer(t, alice)
	s.opts.BodyReadTimeout = 300 * time.Millisecond
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	// Without a key: 401 at once, whatever body was announced.
	for _, head := range []string{
		"GET /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		got, took := rawRequest(t, addr, head, 5*time.Second)
		require.Contains(t, got, "401 Unauthorized", head)
		require.Less(t, took, 200*time.Millisecond, head)
	}
	// Unknown endpoints and methods are answered before any body too.
	got, took := rawRequest(t, addr, "POST /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n", 5*time.Second)
	require.Contains(t, got, "405")
	require.Less(t, took, 200*time.Millisecond)

	// With a key, a body that never comes is cut at the read timeout.
	for _, head := range []string{
		"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + alice.Secret + "\r\nContent-Length: 10\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + alice.Secret + "\r\nContent-Length: 100\r\n\r\n{",
	} {
		got, took := rawRequest(t, addr, head, 5*time.Second)
		require.Less(t, took, 2*time.Second, head)
		require.GreaterOrEqual(t, took, 300*time.Millisecond, head)
		if got != "" {
			require.Contains(t, got, "408", head)
		}
	}

	// A body that arrives is read and answered on a connection kept alive.
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	br := bufio.NewReader(conn)
	for range 2 {
		_, err = io.WriteString(conn, "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+alice.Secret+"\r\nContent-Length: 2\r\n\r\n{}")
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.False(t, resp.Close)
	}
}

// refusingClient is a Temporal client whose every start fails with err.
type refusingClient struct {
	client.Client
	err    error
	starts int
}

func (c *refusingClient) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	c.starts++
	return nil, c.err
}

func TestTooLargeForTemporalIsNotRetryable(t *testing.T) {
	alice := Key{Name: "alice", Secret: "sk-0123456789abcdef"}
	s := testServer(t, alice)
	s.opts.MaxRequestBytes = 1 << 20
	fake := &refusingClient{err: serviceerror.NewUnavailable("down")}
	s.opts.Client = fake
	h := s.Handler()
	chat := func(content string) string {
		return `{"model":"team","messages":[{"role":"user","content":"` + content + `"}]}`
	}

	// Under the request limit, but '<' is six bytes once encoded, and the
	// conversation is in the input and the memo: refused before any start.
	status, v := do(t, h, "POST", "/v1/chat/completions", alice.Secret, chat(strings.Repeat("<", 1000<<10)))
	require.Equal(t, 413, status, v)
	require.Contains(t, errMessage(v), "once encoded for Temporal")
	require.Contains(t, errMessage(v), "over the limit of")
	require.Zero(t, fake.starts)
	require.Empty(t, s.running["alice"])

	// Temporal's own refusals for size are 413 too, never a 503 to retry.
	for _, err := range []error{
		serviceerror.NewInvalidArgument("Blob data size exceeds limit."),
		serviceerror.NewInvalidArgument("Memo size exceeds limit."),
		serviceerror.NewResourceExhausted(enumspb.RESOURCE_EXHAUSTED_CAUSE_UNSPECIFIED, "grpc: received message larger than max (5242880 vs. 4194304)"),
	} {
		fake.err = err
		status, v = do(t, h, "POST", "/v1/chat/completions", alice.Secret, chat("hi"))
		require.Equal(t, 413, status, err.Error())
		require.Contains(t, errMessage(v), "too large")
		require.NotContains(t, errMessage(v), "try again")
	}
	// Temporal being away stays a 503 to retry.
	fake.err = serviceerror.NewUnavailable("down")
	status, _ = do(t, h, "POST", "/v1/chat/completions", alice.Secret, chat("hi"))
	require.Equal(t, 503, status)
}

// listingClient lists the executions it holds, two to a page.
type listingClient struct {
	client.Client
	execs   []*workflowpb.WorkflowExecutionInfo
	queries []string
}

func (c *listingClient) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	c.queries = append(c.queries, req.GetQuery())
	from := 0
	if len(req.GetNextPageToken()) > 0 {
		from, _ = strconv.Atoi(string(req.GetNextPageToken()))
	}
	to := min(from+2, len(c.execs))
	resp := &workflowservice.ListWorkflowExecutionsResponse{Executions: c.execs[from:to]}
	if to < len(c.execs) {
		resp.NextPageToken = []byte(strconv.Itoa(to))
	}
	return resp, nil
}

func TestListResponsesOfTheKey(t *testing.T) {
	alice := Key{Name: "alice", Secret: "sk-0123456789abcdef"}
	bob := Key{Name: "bob", Secret: "sk-bbbbbbbbbbbbbbbb"}
	s := testServer(t, alice, bob)
	dc := converter.GetDefaultDataConverter()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	exec := func(id, key string, started time.Time, status enumspb.WorkflowExecutionStatus, history int64) *workflowpb.WorkflowExecutionInfo {
		info := &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: id + "-run"},
			Type: &commonpb.WorkflowType{Name: contract.CoordinationName}, Status: status, HistoryLength: history, StartTime: timestamppb.New(started)}
		if key != "-" {
			p, err := dc.ToPayload(runMemo{Key: key, Model: "team"})
			require.NoError(t, err)
			info.Memo = &commonpb.Memo{Fields: map[string]*commonpb.Payload{memoKey: p}}
		}
		return info
	}
	fake := &listingClient{execs: []*workflowpb.WorkflowExecutionInfo{
		exec("resp-old", "alice", t0, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, 40),
		exec("resp-bob", "bob", t0.Add(time.Minute), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, 10),
		exec("not-served", "-", t0.Add(2*time.Minute), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, 10),
		exec("resp-new", "alice", t0.Add(3*time.Minute), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, 2),
		exec("resp-mid", "alice", t0.Add(2*time.Minute), enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, 30),
	}}
	s.opts.Client = fake
	h := s.Handler()

	status, v := do(t, h, http.MethodGet, "/v1/responses", alice.Secret, "")
	require.Equal(t, 200, status, v)
	require.Equal(t, "list", v["object"])
	require.Equal(t, false, v["has_more"])
	var got []string
	for _, d := range v["data"].([]any) {
		m := d.(map[string]any)
		got = append(got, fmt.Sprintf("%s %s %d", m["id"], m["status"], int64(m["created_at"].(float64))))
	}
	require.Equal(t, []string{
		fmt.Sprintf("resp-new queued %d", t0.Add(3*time.Minute).Unix()),
		fmt.Sprintf("resp-mid failed %d", t0.Add(2*time.Minute).Unix()),
		fmt.Sprintf("resp-old completed %d", t0.Unix()),
	}, got, "the key's own runs, newest first")

	status, v = do(t, h, http.MethodGet, "/v1/responses?limit=1", alice.Secret, "")
	require.Equal(t, 200, status)
	require.Len(t, v["data"], 1)
	require.Equal(t, true, v["has_more"])
	status, _ = do(t, h, http.MethodGet, "/v1/responses?limit=101", alice.Secret, "")
	require.Equal(t, 400, status)

	status, v = do(t, h, http.MethodGet, "/v1/responses", bob.Secret, "")
	require.Equal(t, 200, status)
	require.Len(t, v["data"], 1)
	status, _ = do(t, h, http.MethodGet, "/v1/responses", "", "")
	require.Equal(t, 401, status)

	s.opts.KeySearchAttribute = true
	_, _ = do(t, h, http.MethodGet, "/v1/responses", alice.Secret, "")
	require.Contains(t, fake.queries[len(fake.queries)-1], contract.SearchAttrServeKey+` = "alice"`)
}

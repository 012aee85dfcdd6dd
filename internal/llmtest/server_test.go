package llmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const voteTool = `{"type":"function","function":{"name":"vote","parameters":{"type":"object"}}}`

func body(model, last string, stream bool, tools ...string) string {
	opts := ""
	if stream {
		opts = `,"stream":true,"stream_options":{"include_usage":true}`
	}
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":%q}],"tools":[%s]%s}`,
		model, last, strings.Join(tools, ","), opts)
}

func post(t *testing.T, s *Server, payload string) (*http.Response, []byte) {
	t.Helper()
	res, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(payload))
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, b
}

func TestTextReplyWithDeterministicUsage(t *testing.T) {
	s := Start(t, Text("hello there"))
	res, b := post(t, s, body("m1", "hi", false))
	require.Equal(t, http.StatusOK, res.StatusCode, string(b))

	var c wireCompletion
	require.NoError(t, json.Unmarshal(b, &c))
	require.Len(t, c.Choices, 1)
	assert.Equal(t, "hello there", *c.Choices[0].Message.Content)
	assert.Equal(t, "stop", *c.Choices[0].FinishReason)
	assert.Equal(t, "m1", c.Model)
	// "be brief" + "hi" = 10 chars → 3 tokens; "hello there" = 11 chars → 3.
	assert.Equal(t, wireUsage{PromptTokens: 3, CompletionTokens: 3, TotalTokens: 6}, *c.Usage)
}

func TestRulesMatchInOrderAndFallThroughAfterTimes(t *testing.T) {
	s := Start(t,
		Call("vote", `{"agent_id":"agent1"}`).IfTool("vote").IfLastContains("decide").Once(),
		Text("model two").IfModel("m2"),
		Text("third request").IfN(func(n int) bool { return n == 3 }),
		Text("fallback").IfContains("brief"),
	)
	replies := []string{}
	for _, p := range []string{
		body("m1", "please decide", false, voteTool), // vote rule
		body("m1", "please decide", false, voteTool), // vote rule used up → fallback
		body("m1", "x", false),                       // request 3
		body("m2", "x", false),                       // model rule
	} {
		_, b := post(t, s, p)
		var c wireCompletion
		require.NoError(t, json.Unmarshal(b, &c), string(b))
		m := c.Choices[0].Message
		if len(m.ToolCalls) > 0 {
			replies = append(replies, "call:"+m.ToolCalls[0].Function.Name+":"+m.ToolCalls[0].ID)
		} else {
			replies = append(replies, *m.Content)
		}
	}
	assert.Equal(t, []string{"call:vote:call_1_0", "fallback", "third request", "model two"}, replies)
	assert.Equal(t, 4, s.Count())
	reqs := s.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, 1, reqs[0].N)
	assert.True(t, reqs[0].HasTool("vote"))
	assert.Equal(t, "please decide", reqs[0].Last().Content)
	assert.Equal(t, "application/json", reqs[0].Header.Get("Content-Type"))
}

func TestNoMatchIs500NamingTheRequest(t *testing.T) {
	s := Start(t, Text("never").IfModel("other"))
	res, b := post(t, s, body("m1", "what is 2+2?", false))
	assert.Equal(t, http.StatusInternalServerError, res.StatusCode)
	assert.Contains(t, string(b), `llmtest: no rule matched request 1: last message (user): \"what is 2+2?\"`)
}

func TestErrorReplyWithRetryAfter(t *testing.T) {
	s := Start(t, Fail(429, "slow down").RetryAfter("7"))
	res, b := post(t, s, body("m1", "x", false))
	assert.Equal(t, 429, res.StatusCode)
	assert.Equal(t, "7", res.Header.Get("Retry-After"))
	assert.JSONEq(t, `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, string(b))
}

// sse reads a stream body into its data payloads.
func sse(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, data)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

func TestStreamSplitsToolCallsAndEndsWithUsage(t *testing.T) {
	s := Start(t, Calls(
		ToolCall{Name: "write_file", Arguments: `{"path":"a.txt","content":"0123456789"}`},
		ToolCall{ID: "call_x", Name: "vote", Arguments: `{}`},
	))
	s.ChunkRunes = 8
	res, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body("m1", "go", true)))
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	events := sse(t, res.Body)
	require.Equal(t, "[DONE]", events[len(events)-1])

	var chunks []wireCompletion
	for _, e := range events[:len(events)-1] {
		var c wireCompletion
		require.NoError(t, json.Unmarshal([]byte(e), &c), e)
		chunks = append(chunks, c)
	}
	assert.Equal(t, "assistant", chunks[0].Choices[0].Delta.Role)

	head := chunks[1].Choices[0].Delta.ToolCalls[0]
	assert.Equal(t, 0, *head.Index)
	assert.Equal(t, "call_1_0", head.ID)
	assert.Equal(t, "function", head.Type)
	assert.Equal(t, "write_file", head.Function.Name)
	assert.Empty(t, head.Function.Arguments)

	args := map[int]string{}
	fragments := 0
	for _, c := range chunks[1:] {
		if len(c.Choices) == 0 || c.Choices[0].Delta == nil {
			continue
		}
		for _, tc := range c.Choices[0].Delta.ToolCalls {
			args[*tc.Index] += tc.Function.Arguments
			if tc.Function.Name == "" {
				fragments++
			}
		}
	}
	assert.Equal(t, `{"path":"a.txt","content":"0123456789"}`, args[0])
	assert.Equal(t, `{}`, args[1])
	assert.Greater(t, fragments, 3, "arguments must arrive in several fragments")

	finish := chunks[len(chunks)-2]
	assert.Equal(t, "tool_calls", *finish.Choices[0].FinishReason)
	last := chunks[len(chunks)-1]
	assert.Empty(t, last.Choices)
	require.NotNil(t, last.Usage)
	assert.Equal(t, int64(3), last.Usage.PromptTokens) // "be brief"+"go" = 10 chars
}

func TestStreamWithoutTypeOmitsIt(t *testing.T) {
	s := Start(t, Call("vote", `{}`).WithoutType())
	res, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body("m1", "go", true)))
	require.NoError(t, err)
	defer res.Body.Close()
	for _, e := range sse(t, res.Body) {
		assert.NotContains(t, e, `"type"`)
	}
}

func TestDelayHonoursCancellation(t *testing.T) {
	s := Start(t, Text("late").After(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(body("m1", "x", false)))
	start := time.Now()
	_, err := http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestDropClosesTheConnection(t *testing.T) {
	s := Start(t, Drop())
	_, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body("m1", "x", false)))
	require.Error(t, err)
	assert.Equal(t, 1, s.Count())
}

func TestDropAfterChunksCutsTheStream(t *testing.T) {
	s := Start(t, Text(strings.Repeat("word ", 50)).DropAfter(3))
	res, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body("m1", "x", true)))
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, 3, strings.Count(string(b), "data: "))
}

func TestFuncRuleSeesTheRequest(t *testing.T) {
	s := Start(t, Func(func(r Request) Reply {
		return Reply{Text: fmt.Sprintf("%d messages, last %q", len(r.Messages), r.Last().Content)}
	}))
	_, b := post(t, s, body("m1", "ping", false))
	assert.Contains(t, string(b), `2 messages, last \"ping\"`)
}

func TestLatencyAppliesToEveryCall(t *testing.T) {
	s := NewServer(Text("ok"))
	s.Latency = 30 * time.Millisecond
	require.NoError(t, s.Start())
	defer s.Close()
	start := time.Now()
	post(t, s, body("m1", "x", false))
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
}

func TestConcurrentRequestsAreAllRecorded(t *testing.T) {
	s := Start(t, Text("ok"))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := http.Post(s.URL()+"/chat/completions", "application/json",
				strings.NewReader(body("m1", fmt.Sprint("q", i), i%2 == 0)))
			if assert.NoError(t, err) {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 20, s.Count())
	seen := map[int]bool{}
	for _, r := range s.Requests() {
		seen[r.N] = true
	}
	assert.Len(t, seen, 20)
}

func TestUnknownRouteAndBadJSON(t *testing.T) {
	s := Start(t, Text("ok"))
	res, err := http.Get(s.URL() + "/models")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusNotFound, res.StatusCode)

	res, b := post(t, s, `{"messages":`)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Contains(t, string(b), "llmtest: decode chat-completions body")
}

func TestSplitKeepsRunesWhole(t *testing.T) {
	assert.Equal(t, []string{"héll", "o wö", "rld"}, split("héllo wörld", 4))
	assert.Nil(t, split("", 4))
}

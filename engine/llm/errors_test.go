package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ask(t *testing.T, m *OpenAI) error {
	t.Helper()
	_, err := m.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hello"}}})
	return err
}

func TestErrorClassification(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rule       llmtest.Rule
		status     int
		retryable  bool
		retryAfter time.Duration
		cause      string
	}{
		{"429 with Retry-After seconds", llmtest.Fail(429, "Rate limit reached").RetryAfter("7"),
			429, true, 7 * time.Second, "rate limited (429) from http://"},
		{"429 with retry-after-ms", llmtest.Fail(429, "slow").WithHeader("retry-after-ms", "1500"),
			429, true, 1500 * time.Millisecond, "retry after 1.5s"},
		{"408", llmtest.Fail(408, "timeout"), 408, true, 0, "request timed out (408)"},
		{"409", llmtest.Fail(409, "conflict"), 409, true, 0, "(409)"},
		{"500", llmtest.Fail(500, "The server had an error"), 500, true, 0, "server error (500) from http://127.0.0.1"},
		{"503 with Retry-After", llmtest.Fail(503, "overloaded").RetryAfter("2"), 503, true, 2 * time.Second, "overloaded"},
		{"dropped connection", llmtest.Drop(), 0, true, 0, "network error talking to http://"},
		{"connection lost mid-stream", llmtest.Text(strings.Repeat("abc ", 40)).DropAfter(4), 0, true, 0, "network error"},
		{"401", llmtest.Fail(401, "Incorrect API key provided"), 401, false, 0,
			"the API key in $TEST_LLM_KEY was rejected (401): check the key"},
		{"403", llmtest.Fail(403, "You are not allowed to sample from this model"), 403, false, 0,
			`permission denied (403) for model "gpt-test"`},
		{"404", llmtest.Fail(404, "The model `gpt-test` does not exist"), 404, false, 0,
			`model "gpt-test" not found at http://127.0.0.1`},
		{"400 context length by code", llmtest.Fail(400, "This model's maximum context length is 8192 tokens").WithCode("context_length_exceeded"),
			400, false, 0, `context too long for model "gpt-test" (400)`},
		{"400 context length by message only", llmtest.Fail(400, "This model's maximum context length is 4096 tokens. However, you requested 5000"),
			400, false, 0, "context too long"},
		{"400 other", llmtest.Fail(400, "Invalid schema for function 'vote'"), 400, false, 0,
			`bad request (400) to model "gpt-test" at http://127.0.0.1:`},
		{"422", llmtest.Fail(422, "unprocessable"), 422, false, 0, "rejected (422)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.Start(t, tc.rule)
			err := ask(t, newModel(t, s, nil))
			var e *Error
			require.True(t, errors.As(err, &e), "want *Error, got %T %v", err, err)
			assert.Equal(t, tc.status, e.Status)
			assert.Equal(t, tc.retryable, e.Retryable)
			assert.Equal(t, tc.retryable, IsRetryable(err))
			assert.Equal(t, tc.retryAfter, RetryAfter(err))
			assert.Contains(t, err.Error(), tc.cause)
			assert.NotContains(t, err.Error(), testKey)
			assert.NotContains(t, fmt.Sprintf("%v %+v %#v", err, err, e), testKey)
			assert.NotNil(t, errors.Unwrap(err))
			assert.Equal(t, 1, s.Count(), "exactly one HTTP request per call: the client's retries are off")
		})
	}
}

func TestServerMessagesHaveTheKeyRedacted(t *testing.T) {
	s := llmtest.Start(t, llmtest.Fail(400, "bad key format: "+testKey))
	err := ask(t, newModel(t, s, nil))
	assert.Contains(t, err.Error(), "bad key format: [redacted]")
	assert.NotContains(t, err.Error(), testKey)
}

func TestUnauthorizedWithoutKeySaysToSetOne(t *testing.T) {
	s := llmtest.Start(t, llmtest.Fail(401, "key required"))
	m, err := NewFromEnv(Config{Model: "m", BaseURL: s.URL(), APIKeyEnv: "VLLM_KEY"}, func(string) string { return "" })
	require.NoError(t, err)
	assert.ErrorContains(t, ask(t, m), "requires an API key (401) but $VLLM_KEY is empty")
}

func TestContextCancellationIsReturnedAsIs(t *testing.T) {
	s := llmtest.Start(t, llmtest.Text("late").After(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := newModel(t, s, nil).Complete(ctx, Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
	assert.Equal(t, context.DeadlineExceeded, err)
	assert.False(t, IsRetryable(err))
}

func TestConnectionRefusedIsRetryable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	m, err := New(Config{Model: "m", BaseURL: "http://" + addr + "/v1"}, "")
	require.NoError(t, err)
	err = ask(t, m)
	assert.True(t, IsRetryable(err), "%v", err)
	assert.Contains(t, err.Error(), "connection refused")
}

// rawServer serves a fixed handler, for wire shapes the scripted server
// deliberately does not produce.
func rawServer(t *testing.T, h http.HandlerFunc) *OpenAI {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	m, err := New(Config{Model: "m", BaseURL: hs.URL + "/v1", APIKeyEnv: "K"}, testKey)
	require.NoError(t, err)
	return m
}

func TestNonJSONErrorBodyKeepsTheStatus(t *testing.T) {
	m := rawServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, "<html>502 Bad Gateway</html>")
	})
	err := ask(t, m)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 502, e.Status)
	assert.True(t, e.Retryable)
	assert.Equal(t, 3*time.Second, e.RetryAfter)
}

func TestStreamWithoutFinishReasonIsRetryable(t *testing.T) {
	m := rawServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"par"}}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	err := ask(t, m)
	assert.True(t, IsRetryable(err))
	assert.Contains(t, err.Error(), "ended before the model finished")
}

// A 200 reply that is not a stream (a sign-in page, a plain JSON object)
// is a protocol error, not retryable, naming the base URL and the content
// type and never quoting what answered (issue 22: a base_url on an internal
// service had its reply quoted into status and history); an empty 200 body
// is still a cut stream, retryable.
func TestNonStreamBodyIsAProtocolError(t *testing.T) {
	for _, tc := range []struct{ contentType, body string }{
		{"text/html", "<html><body>Please sign in</body></html>"},
		{"application/json", `{"object":"chat.completion","choices":[]}`},
		{"", "Please sign in"},
		{"text/event-stream", "<html>not events</html>"},
	} {
		m := rawServer(t, func(w http.ResponseWriter, _ *http.Request) {
			if tc.contentType != "" {
				w.Header().Set("Content-Type", tc.contentType)
			}
			fmt.Fprint(w, tc.body)
		})
		err := ask(t, m)
		var e *Error
		require.ErrorAs(t, err, &e, tc.body)
		assert.ErrorIs(t, err, ErrProtocol)
		assert.False(t, e.Retryable, tc.body)
		assert.Equal(t, 200, e.Status)
		assert.Contains(t, e.Cause, m.baseURL)
		assert.Contains(t, e.Cause, "not an OpenAI-compatible event stream")
		assert.NotContains(t, e.Cause, tc.body)
		assert.NotContains(t, e.Cause, "sign in")
	}
	m := rawServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
	})
	err := ask(t, m)
	assert.True(t, IsRetryable(err), "an empty stream was cut: %v", err)
	assert.NotErrorIs(t, err, ErrProtocol)
}

func TestErrorEventInsideStream(t *testing.T) {
	for _, tc := range []struct {
		event     string
		retryable bool
		cause     string
	}{
		{`{"error":{"message":"The server is overloaded","type":"server_error"}}`, true, "reported an error mid-stream: The server is overloaded"},
		{`{"error":{"message":"too long","code":"context_length_exceeded"}}`, false, "context too long"},
	} {
		m := rawServer(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"}}]}`+"\n\n")
			fmt.Fprintf(w, "data: %s\n\n", tc.event)
		})
		err := ask(t, m)
		assert.Equal(t, tc.retryable, IsRetryable(err), "%v", err)
		assert.Contains(t, err.Error(), tc.cause)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	for _, tc := range []struct {
		header http.Header
		want   time.Duration
	}{
		{nil, 0},
		{h("Retry-After", "7"), 7 * time.Second},
		{h("Retry-After", "0.5"), 500 * time.Millisecond},
		{h("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat)), 90 * time.Second},
		{h("Retry-After", now.Add(-time.Minute).Format(http.TimeFormat)), 0},
		{h("Retry-After", "soon"), 0},
		{h("Retry-After", "-3"), 0},
		{h("Retry-After-Ms", "250", "Retry-After", "9"), 250 * time.Millisecond},
		{h("Retry-After-Ms", "x", "Retry-After", "9"), 9 * time.Second},
	} {
		assert.Equal(t, tc.want, parseRetryAfter(tc.header, now), "%v", tc.header)
	}
}

func TestHelpersOnOtherErrors(t *testing.T) {
	assert.False(t, IsRetryable(nil))
	assert.False(t, IsRetryable(errors.New("x")))
	assert.Zero(t, RetryAfter(errors.New("x")))
	wrapped := fmt.Errorf("step 3: %w", &Error{Retryable: true, RetryAfter: time.Second})
	assert.True(t, IsRetryable(wrapped))
	assert.Equal(t, time.Second, RetryAfter(wrapped))
}

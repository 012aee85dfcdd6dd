package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

func limitedModel(t *testing.T, url string, l Limits) *OpenAI {
	t.Helper()
	m, err := New(Config{Model: "gpt-test", BaseURL: url, Limits: l}, "")
	require.NoError(t, err)
	return m
}

var hello = []Message{{Role: RoleUser, Content: "hi"}}

// A reply that never ends is stopped at the byte limit, as a failed call
// that names the limit, and is not retried.
func TestEndlessReplyStopsAtReplyBytes(t *testing.T) {
	s := llmtest.Start(t, llmtest.Text(strings.Repeat("x", 1000)).Forever())
	m := limitedModel(t, s.URL(), Limits{ReplyBytes: 256 << 10})
	_, err := m.Complete(context.Background(), Request{Messages: hello})
	require.Error(t, err)
	assert.True(t, IsReplyLimit(err), "%v", err)
	assert.False(t, IsRetryable(err))
	assert.Contains(t, err.Error(), "went over 262144 bytes (reply bytes limit)")
}

// A reply that trickles forever is stopped at the duration limit, not at
// the caller's deadline.
func TestTricklingReplyStopsAtReplyDuration(t *testing.T) {
	s := llmtest.Start(t, llmtest.Text("x").Forever().Trickle(20*time.Millisecond))
	m := limitedModel(t, s.URL(), Limits{ReplyDuration: 300 * time.Millisecond})
	_, err := m.Complete(context.Background(), Request{Messages: hello})
	require.Error(t, err)
	assert.True(t, IsReplyLimit(err), "%v", err)
	assert.Contains(t, err.Error(), "took longer than 300ms (reply duration limit)")

	// The caller's own cancellation stays a context error.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = limitedModel(t, s.URL(), Limits{}).Complete(ctx, Request{Messages: hello})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, IsReplyLimit(err))
}

// A tool call whose arguments never end stops the reply just past the
// argument limit; the reply is returned with the calls before it whole.
func TestEndlessToolArgumentsAreCutAtCallArgBytes(t *testing.T) {
	s := llmtest.Start(t, llmtest.Respond(llmtest.Reply{
		Endless: true,
		ToolCalls: []llmtest.ToolCall{
			{Name: "list_files", Arguments: `{}`},
			{Name: "write_file", Arguments: strings.Repeat("y", 4096)},
		},
	}))
	m := limitedModel(t, s.URL(), Limits{CallArgBytes: 64 << 10})
	res, err := m.Complete(context.Background(), Request{Messages: hello})
	require.NoError(t, err)
	require.Len(t, res.Message.ToolCalls, 2, "%d calls", len(res.Message.ToolCalls))
	assert.Equal(t, "list_files", res.Message.ToolCalls[0].Name)
	assert.Equal(t, `{}`, res.Message.ToolCalls[0].Arguments)
	assert.Equal(t, 64<<10+1, len(res.Message.ToolCalls[1].Arguments))
	assert.Equal(t, "tool_calls", res.FinishReason)
}

// One stream event that never ends (no blank line, or one endless line) is
// cut before it is held in memory.
func TestEndlessEventIsCut(t *testing.T) {
	for name, chunk := range map[string]string{
		"endless line":       strings.Repeat("z", 8192),
		"endless data lines": "data: " + strings.Repeat("z", 100) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			url := serveForever(t, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"", chunk)
			m := limitedModel(t, url, Limits{ReplyBytes: 64 << 10})
			_, err := m.Complete(context.Background(), Request{Messages: hello})
			require.Error(t, err)
			assert.True(t, IsReplyLimit(err), "%v", err)
			assert.Contains(t, err.Error(), "one stream event went over")
		})
	}
}

// serveForever answers every request 200 as an event stream with head and
// then chunk again and again until the client leaves.
func serveForever(t *testing.T, head, chunk string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(head))
		for r.Context().Err() == nil {
			if _, err := w.Write([]byte(chunk)); err != nil {
				return
			}
		}
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String() + "/v1"
}

// An error body that never ends is read only up to its start.
func TestEndlessErrorBodyIsBounded(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		for r.Context().Err() == nil {
			if _, err := w.Write([]byte(strings.Repeat("<html>", 1000))); err != nil {
				return
			}
		}
	})}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	m := limitedModel(t, "http://"+l.Addr().String()+"/v1", Limits{ReplyDuration: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = m.Complete(ctx, Request{Messages: hello})
	var e *Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, http.StatusBadGateway, e.Status)
}

// Peak memory of calls under endless replies is bounded by the limits: ten
// concurrent calls with a 1 MiB reply limit stay far below what an unbounded
// read of the same streams would take.
func TestEndlessRepliesKeepMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("streams some hundred megabytes")
	}
	s := llmtest.Start(t, llmtest.Text(strings.Repeat("x", 4096)).Forever())
	const calls, limit = 10, 1 << 20
	m := limitedModel(t, s.URL(), Limits{ReplyBytes: limit})
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := sampleHeap(t, func() {
		done := make(chan error, calls)
		for range calls {
			go func() {
				_, err := m.Complete(context.Background(), Request{Messages: hello})
				done <- err
			}()
		}
		for range calls {
			assert.True(t, IsReplyLimit(<-done))
		}
	})
	grown := int64(peak) - int64(before.HeapAlloc)
	// Each call holds its reply text (≤ limit) a few times over while it
	// is accumulated; 16× the limit per call is a generous ceiling.
	assert.Less(t, grown, int64(calls*16*limit), "heap grew by %d bytes", grown)
	t.Logf("heap grew by %.1f MiB for %d calls at a %d-byte reply limit", float64(grown)/(1<<20), calls, limit)
}

// sampleHeap runs f and returns the highest heap in use seen meanwhile.
func sampleHeap(t *testing.T, f func()) uint64 {
	t.Helper()
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var max uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			max = maxOf(max, ms.HeapAlloc)
			select {
			case <-stop:
				peak <- max
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	return <-peak
}

func maxOf(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// Issue 22, item 10: a 429 with Retry-After: 3600 parked an agent for an
// hour. A wait over the limit fails the call for good instead.
func TestRetryAfterIsCapped(t *testing.T) {
	s := llmtest.Start(t,
		llmtest.Fail(429, "slow down").RetryAfter("3600").Once(),
		llmtest.Fail(429, "slow down").RetryAfter("30").Once())
	m := limitedModel(t, s.URL(), Limits{RetryAfter: time.Minute})
	_, err := m.Complete(context.Background(), Request{Messages: hello})
	require.Error(t, err)
	assert.False(t, IsRetryable(err))
	assert.Zero(t, RetryAfter(err))
	assert.Contains(t, err.Error(), "asks to retry after 1h0m0s, longer than the 1m0s this worker waits")
	_, err = m.Complete(context.Background(), Request{Messages: hello})
	assert.True(t, IsRetryable(err))
	assert.Equal(t, 30*time.Second, RetryAfter(err))
}

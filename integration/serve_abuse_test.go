//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
)

// post sends a raw request and returns the status and the body.
func post(t *testing.T, url, key string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// servedRuns counts the workflows serve started for a key, from Temporal.
func servedRuns(t *testing.T, c client.Client, key string) int {
	t.Helper()
	resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("%s = %q", contract.SearchAttrServeKey, key)})
	require.NoError(t, err)
	return len(resp.GetExecutions())
}

func (e *serveEnv) abuse(t *testing.T, _ string) {
	// A server of its own, with a fresh key whose cap is 2.
	base := e.serveInProcess(t, 2, "carol:sk-carol-0123456789abcdef")
	key := "sk-carol-0123456789abcdef"
	url := base + "/v1/chat/completions"
	ok := []byte(`{"model":"team","messages":[{"role":"user","content":"abuse-probe"}]}`)

	cases := []struct {
		name, key string
		body      []byte
		status    int
		says      string
	}{
		{"no key", "", ok, 401, "API key"},
		{"wrong key", "sk-carol-0123456789abcdeX", ok, 401, "API key"},
		{"20 MB body", key, append([]byte(`{"model":"team","messages":[{"role":"user","content":"`), append(bytes.Repeat([]byte("a"), 20<<20), []byte(`"}]}`)...)...), 413, "limit"},
		{"1000 messages", key, thousandMessages(), 400, "limit of 300"},
		{"unknown model", key, []byte(`{"model":"gpt-9","messages":[{"role":"user","content":"abuse-probe"}]}`), 404, "does not exist"},
		{"storage", key, []byte(`{"model":"team","storage":"s3://evil/x","messages":[{"role":"user","content":"abuse-probe"}]}`), 400, "storage cannot be set"},
		{"secrets", key, []byte(`{"model":"team","api_key_env":"AWS_SECRET_ACCESS_KEY","config":{"agents":[]},"messages":[{"role":"user","content":"abuse-probe"}]}`), 400, "cannot be set by a request"},
		{"mcp servers", key, []byte(`{"model":"team","mcp_servers":[{"command":"sh"}],"messages":[{"role":"user","content":"abuse-probe"}]}`), 400, "mcp_servers"},
		{"tool message", key, []byte(`{"model":"team","messages":[{"role":"tool","content":"x"},{"role":"user","content":"abuse-probe"}]}`), 400, "role"},
	}
	for _, tc := range cases {
		status, body := post(t, url, tc.key, tc.body)
		require.Equal(t, tc.status, status, "%s: %s", tc.name, body)
		require.Contains(t, body, `"error"`, tc.name)
		require.Contains(t, body, tc.says, tc.name)
	}

	// 50 at once from one key whose cap is 2: two start, 48 are told to wait.
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	bg := []byte(`{"model":"team","input":"SLOW capped","background":true}`)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _ := post(t, base+"/v1/responses", key, bg)
			mu.Lock()
			codes[status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Equal(t, map[int]int{200: 2, 429: 48}, codes)
	// Only those two ever started: the refused requests, sent before them,
	// left no run in Temporal and never reached a model.
	require.Eventually(t, func() bool { return servedRuns(t, e.c, "carol") == 2 }, 20*time.Second, 200*time.Millisecond)
	for _, r := range e.model.Requests() {
		require.False(t, r.Contains("abuse-probe"), "a refused request reached the model")
	}
}

func thousandMessages() []byte {
	var b strings.Builder
	b.WriteString(`{"model":"team","messages":[`)
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"role":"user","content":"m"}`)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

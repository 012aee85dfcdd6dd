//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// lockedBuffer collects log output written from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSecretsNeverStored runs a whole three-agent session on a real dev
// server with S3 (MinIO) storage and a distinctive API key in the
// environment variable the agents name, then looks for the key, in plain,
// base64, URL-safe base64, hex and URL-escaped form, in the full workflow
// history (payloads decoded), every stored object of the bucket and the
// worker's debug log. The scripted model must have received the key as
// its bearer token, so the scan cannot pass merely because the key was
// never used.
func TestSecretsNeverStored(t *testing.T) {
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	secret := "sk-test-SECRET-" + hex.EncodeToString(b)
	const envName = "SECRETS_TEST_KEY"
	t.Setenv(envName, secret)

	server := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	// The script never echoes anything of the request (headers included):
	// answers and votes are fixed text.
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		switch {
		case strings.Contains(r.Messages[0].Content, "present the final answer"):
			return call("new_answer", map[string]string{"content": "the final answer"})
		case r.HasTool("vote"):
			return call("vote", map[string]string{"agent_id": "agent1", "reason": "it is complete"})
		default:
			return call("new_answer", map[string]string{"content": "answer of " + agentOf(r.Model)})
		}
	}))
	st, _ := s3Store(t, minio, "secrets")

	logs := &lockedBuffer{}
	logger := sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	c, err := client.Dial(client.Options{HostPort: server.HostPort, Namespace: "default", Logger: logger})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	egress, err := config.NewEgress([]string{envName}, nil)
	require.NoError(t, err)
	w := worker.New(c, worker.Options{Store: st, Namespace: "default", Egress: egress})
	require.NoError(t, w.Start())
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(w.Stop) }
	t.Cleanup(stop)

	cfg := team(t, srv.URL(), "agent_a", "agent_b", "agent_c")
	for i := range cfg.Agents {
		cfg.Agents[i].Backend.APIKeyEnv = envName
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const id = "secrets-1"
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "Say something durable.", Config: cfg})
	require.NoError(t, err)
	var res workflows.CoordinationResult
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, coord.StatusConsensus, res.Status)

	// The key was used: every model call carried it as the bearer token.
	reqs := srv.Requests()
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		require.Equal(t, "Bearer "+secret, r.Header.Get("Authorization"))
	}

	forms := map[string]string{
		"plain":          secret,
		"base64":         base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64 raw":     base64.RawStdEncoding.EncodeToString([]byte(secret)),
		"base64 url":     base64.URLEncoding.EncodeToString([]byte(secret)),
		"hex":            hex.EncodeToString([]byte(secret)),
		"url escaped":    url.QueryEscape(secret),
		"random part":    hex.EncodeToString(b),
		"bearer, spaced": "Bearer " + secret,
	}
	scan := func(where, text string) {
		t.Helper()
		for name, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("the API key (%s) leaked into %s", name, where)
			}
		}
	}

	iter := c.GetWorkflowHistory(ctx, id, "", false, 0)
	events := 0
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		data, err := json.Marshal(ev)
		require.NoError(t, err)
		scan("workflow history event "+ev.GetEventType().String(), decodePayloads(string(data)))
		events++
	}
	require.Positive(t, events)

	keys, err := st.List(ctx, "")
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	sessionKeys := 0
	for _, k := range keys {
		if strings.HasPrefix(k, res.Session+"/") || strings.HasPrefix(k, id+"/") {
			sessionKeys++
		}
		data, err := st.Get(ctx, k)
		require.NoError(t, err)
		scan("stored object "+k, string(data))
	}
	require.Positive(t, sessionKeys, "the session stored its files under %s/: %v", id, keys)

	stop()
	log := logs.String()
	require.NotEmpty(t, log, "the worker logged nothing; the log scan would prove nothing")
	scan("the worker log", log)
	t.Logf("scanned %d history events, %d stored objects, %d bytes of worker log, %d model requests",
		events, len(keys), len(log), len(reqs))
}

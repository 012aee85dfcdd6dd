package integration

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// TestAPIKeyNeverLeaves runs a whole session with a distinctive key in the
// worker's environment and scans the workflow history and every stored
// object for it: the key must reach the model endpoint and nothing else.
func TestAPIKeyNeverLeaves(t *testing.T) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	secret := "sk-test-SECRET-" + hex.EncodeToString(b)
	t.Setenv("CONCLAVE_SCAN_KEY", secret)

	server := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		switch {
		case strings.Contains(r.Messages[0].Content, "present the final answer"):
			return call("new_answer", map[string]string{"content": "final"})
		case r.HasTool("vote"):
			return call("vote", map[string]string{"agent_id": "agent1", "reason": "fine"})
		default:
			return call("new_answer", map[string]string{"content": "answer of " + agentOf(r.Model)})
		}
	}))
	st, _ := s3Store(t, minio, "scan")
	c := server.Client(t)
	w := worker.New(c, worker.Options{Store: st, Namespace: "default"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	cfg := team(t, srv.URL(), "agent_a", "agent_b")
	for i := range cfg.Agents {
		cfg.Agents[i].Backend.APIKeyEnv = "CONCLAVE_SCAN_KEY"
	}
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "scan-1", TaskQueue: worker.DefaultTaskQueue},
		workflows.CoordinationName, workflows.CoordinationInput{Task: "t", Config: cfg})
	require.NoError(t, err)
	var res workflows.CoordinationResult
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, workflows.StatusConsensus, res.Status)

	// The key was used: otherwise the scan below would prove nothing.
	require.NotEmpty(t, srv.Requests())
	for _, r := range srv.Requests() {
		require.Equal(t, "Bearer "+secret, r.Header.Get("Authorization"))
	}

	forms := []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), hex.EncodeToString([]byte(secret))}
	scan := func(where, text string) {
		for _, f := range forms {
			require.NotContains(t, text, f, "the API key leaked into %s", where)
		}
	}
	iter := c.GetWorkflowHistory(ctx, "scan-1", "", false, 0)
	events := 0
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		data, err := json.Marshal(ev)
		require.NoError(t, err)
		scan("workflow history", decodePayloads(string(data)))
		events++
	}
	require.Positive(t, events)

	keys, err := st.List(ctx, "")
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	for _, k := range keys {
		data, err := st.Get(ctx, k)
		require.NoError(t, err)
		scan("stored file "+k, string(data))
	}
}

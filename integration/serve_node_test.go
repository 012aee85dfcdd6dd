//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/workflows"
)

// openaiNodeModules finds the node_modules `make openai-node` installs:
// $CONCLAVE_OPENAI_NODE (which must hold it when set, so `make test` never
// passes by skipping), else .tools/node_modules; without it the test skips.
func openaiNodeModules(t *testing.T) string {
	t.Helper()
	dir, set := os.LookupEnv("CONCLAVE_OPENAI_NODE")
	if !set {
		dir = filepath.Join(testenv.ModuleRoot(t), ".tools", "node_modules")
	}
	_, err := os.Stat(filepath.Join(dir, "openai", "package.json"))
	_, nodeErr := exec.LookPath("node")
	switch {
	case (err != nil || nodeErr != nil) && set:
		t.Fatalf("CONCLAVE_OPENAI_NODE=%s: the openai npm package or node is missing (%v, %v); run `make openai-node`", dir, err, nodeErr)
	case err != nil || nodeErr != nil:
		t.Skip("the openai npm package is not installed: run `make openai-node` (or `make test`)")
	}
	return dir
}

func (e *serveEnv) nodeClient(t *testing.T, base string) {
	modules := openaiNodeModules(t)
	cmd := exec.Command("node", filepath.Join(testenv.ModuleRoot(t), "integration", "openai-node", "client.cjs"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "SERVE_URL="+base+"/v1", "SERVE_KEY="+secretOf(keyBob), "SERVE_MODEL=team")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	type usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		InputTokens      int64 `json:"input_tokens"`
	}
	type meta struct {
		SessionID string `json:"session_id"`
		Winner    string `json:"winner"`
		DecidedBy string `json:"decided_by"`
	}
	var got struct {
		Plain struct {
			ID, Content, Reasoning string
			Usage                  usage
			Meta                   meta
		}
		Stream struct {
			Chunks             int
			Content, Reasoning string
			Finish             string
			Usage              usage
			Meta               meta
		}
		Background struct {
			ID, Status string
			Final      struct {
				Status, Text string
				Usage        usage
			}
		}
		UnknownModel struct {
			Status  int
			Message string
		}
	}
	require.NoError(t, json.Unmarshal(out, &got), string(out))

	var res workflows.CoordinationResult
	require.NoError(t, e.c.GetWorkflow(context.Background(), got.Plain.ID, "").Get(context.Background(), &res))
	require.Equal(t, "FINAL ANSWER from the team", got.Plain.Content)
	require.Equal(t, res.Usage.InputTokens, got.Plain.Usage.PromptTokens)
	require.Equal(t, res.Usage.OutputTokens, got.Plain.Usage.CompletionTokens)
	require.Equal(t, meta{SessionID: got.Plain.ID, Winner: "agent_a", DecidedBy: "consensus"}, got.Plain.Meta)
	require.Contains(t, got.Plain.Reasoning, "agent_b answered (agent2.1)")

	require.Equal(t, "FINAL ANSWER from the team", got.Stream.Content)
	require.Equal(t, "stop", got.Stream.Finish)
	require.Positive(t, got.Stream.Usage.PromptTokens)
	require.Equal(t, "agent_a", got.Stream.Meta.Winner)
	require.Contains(t, got.Stream.Reasoning, "voted for agent_a")
	require.Greater(t, got.Stream.Chunks, 4, "progress streams as it happens, a chunk a line")
	followed := false
	for _, r := range e.model.Requests() {
		if r.Contains("node follow-up") && r.Contains("node first answer") && r.Contains("node first question") {
			followed = true
		}
	}
	require.True(t, followed, "the earlier messages reached the agents as context")

	require.Contains(t, []string{"queued", "in_progress"}, got.Background.Status)
	require.Equal(t, "completed", got.Background.Final.Status)
	require.Equal(t, "FINAL ANSWER from the team", got.Background.Final.Text)
	require.Positive(t, got.Background.Final.Usage.InputTokens)
	require.Equal(t, 404, got.UnknownModel.Status, got.UnknownModel.Message)
}

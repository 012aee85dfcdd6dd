//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

func call(name string, args map[string]string) llmtest.Reply {
	data, _ := json.Marshal(args)
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: name, Arguments: string(data)}}}
}

// longAnswer is far larger than a history preview, to prove that whole
// answers stay in storage.
func longAnswer(agent string) string {
	return strings.Repeat(fmt.Sprintf("%s explains the Beatles in detail. ", agent), 60) + "END-" + agent
}

// TestSessionEndToEnd runs a three-agent session on a real dev server with
// S3 storage on MinIO, and checks the result, the stored files and that the
// workflow history holds previews, not answers.
func TestSessionEndToEnd(t *testing.T) {
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		agent := agentOf(r.Model)
		switch {
		case strings.Contains(r.Messages[0].Content, "present the final answer"):
			return call("new_answer", map[string]string{"content": "FINAL: the Beatles page"})
		case r.HasTool("vote") && r.Contains("<agent2."):
			return call("vote", map[string]string{"agent_id": "agent2", "reason": "most detailed"})
		case r.HasTool("vote"):
			// agent2's answer is not here yet: look around until it is
			// injected, as a model that wants to read it would.
			rep := call("list_files", map[string]string{})
			rep.Delay = 50 * time.Millisecond
			return rep
		default:
			return call("new_answer", map[string]string{"content": longAnswer(agent)})
		}
	}))
	st, _ := s3Store(t, minio, "sessions")
	c := temporal.Client(t)
	w := worker.New(c, worker.Options{Store: st, Namespace: "default", HeartbeatEvery: time.Second})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	cfg := team(t, srv.URL(), "agent_a", "agent_b", "agent_c")
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "e2e-1", TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "Create a website about the Beatles.", Config: cfg})
	require.NoError(t, err)
	var res workflows.CoordinationResult
	require.NoError(t, run.Get(ctx, &res))

	require.Equal(t, coord.StatusConsensus, res.Status)
	require.Equal(t, "agent_b", res.Winner)
	require.Equal(t, "FINAL: the Beatles page", res.FinalAnswer)
	require.Equal(t, map[string]int{"agent_b": 3}, res.Votes)
	require.Positive(t, res.Usage.InputTokens)
	require.True(t, strings.HasPrefix(res.Session, "s3://conclave/sessions/e2e-1"), res.Session)

	sess, err := session.Load(ctx, subStore(st, "e2e-1"))
	require.NoError(t, err)
	require.Empty(t, sess.Problems)
	for _, a := range sess.Agents {
		require.Equal(t, 1, a.AnswerCount, a.ID)
		require.Equal(t, longAnswer(a.ID), a.Latest().Text, "the whole answer is stored")
		require.Equal(t, "agent_b", a.Vote.Target)
	}
	md, err := st.Get(ctx, "e2e-1/final/answer.md")
	require.NoError(t, err)
	require.Equal(t, "FINAL: the Beatles page\n", string(md))
	statusJSON, err := st.Get(ctx, "e2e-1/status.json")
	require.NoError(t, err)
	require.Contains(t, string(statusJSON), `"phase": "done"`)

	// History holds previews and keys, never a whole answer.
	iter := c.GetWorkflowHistory(ctx, "e2e-1", "", false, 0)
	var history strings.Builder
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		data, _ := json.Marshal(ev)
		history.WriteString(decodePayloads(string(data)))
	}
	require.Contains(t, history.String(), "agent_a · step 1")
	for _, id := range []string{"agent_a", "agent_b", "agent_c"} {
		require.NotContains(t, history.String(), "END-"+id, "a whole answer reached the history")
	}

	var s struct {
		Phase  string         `json:"phase"`
		Winner string         `json:"winner"`
		Votes  map[string]int `json:"votes"`
	}
	v, err := c.QueryWorkflow(ctx, "e2e-1", "", contract.QueryStatus)
	require.NoError(t, err)
	require.NoError(t, v.Get(&s))
	require.Equal(t, "done", s.Phase)
	require.Equal(t, "agent_b", s.Winner)
}

//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
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

// Steps whose turn ends without an action through no fault of the agent's
// that a retry would repeat end the turn, not the agent, on a real dev
// server and MinIO: the step's folder is fenced, the agent is relaunched
// with the next step and takes part in the verdict, and `session status`
// on the stored session agrees with the workflow.
func TestEndedTurnsRelaunchTheAgent(t *testing.T) {
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	st, _ := s3Store(t, minio, "turns")
	c := temporal.Client(t)
	w := worker.New(c, worker.Options{Store: st, Namespace: "default", HeartbeatEvery: time.Second})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	bin := conclaveBinary(t)
	ctx := context.Background()

	run := func(t *testing.T, id string, srv *llmtest.Server, orch func(*workflows.CoordinationInput), ids ...string) workflows.CoordinationResult {
		t.Helper()
		in := workflows.CoordinationInput{Task: "Write about the Beatles.", Config: team(t, srv.URL(), ids...)}
		orch(&in)
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: worker.DefaultTaskQueue}, contract.CoordinationName, in)
		require.NoError(t, err)
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		var res workflows.CoordinationResult
		require.NoError(t, r.Get(wctx, &res))
		return res
	}
	fencedAs := func(t *testing.T, id, agent string, step int) string {
		t.Helper()
		var l session.LaunchFile
		require.NoError(t, session.ReadJSON(ctx, subStore(st, id), session.LaunchKey(agent, step), &l))
		keys, _ := subStore(st, id).List(ctx, "agents/"+agent+"/")
		require.True(t, l.Fenced, "%s step %d is fenced: %+v; files %v", agent, step, l, keys)
		return l.Reason
	}
	agreesWithWorkflow := func(t *testing.T, id string, res workflows.CoordinationResult) {
		t.Helper()
		out, errOut, code := runBin(t, bin, "session", "status", "--session-dir", minio.URL("conclave", "turns/"+id))
		require.Equal(t, 0, code, errOut)
		var s coord.Status
		require.NoError(t, json.Unmarshal([]byte(out), &s), out)
		require.Equal(t, res.Winner, s.Winner)
		require.Empty(t, s.Relaunch)
		for a, as := range s.Agents {
			require.False(t, as.Running, "%s is not running", a)
		}
	}
	presenting := func(r llmtest.Request) bool {
		return strings.Contains(r.Messages[0].Content, "present the final answer")
	}

	// Peers use up max_new_answers_global while agent_c's slow first step
	// runs: its answer is refused, its turn ends (it could not vote), and
	// it is relaunched vote-only, shown the answers. Everyone votes and the
	// cap holds.
	t.Run("global cap during a first step", func(t *testing.T) {
		srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			agent := agentOf(r.Model)
			switch {
			case presenting(r):
				return call("new_answer", map[string]string{"content": "FINAL by " + agent})
			case r.HasTool("vote") && r.Contains("<agent1."):
				return call("vote", map[string]string{"agent_id": "agent1", "reason": "first and best"})
			case r.HasTool("vote"):
				rep := call("list_files", map[string]string{})
				rep.Delay = 50 * time.Millisecond
				return rep
			case agent == "agent_c":
				rep := call("new_answer", map[string]string{"content": "late answer of agent_c"})
				rep.Delay = 2 * time.Second
				return rep
			}
			return call("new_answer", map[string]string{"content": "answer of " + agent})
		}))
		res := run(t, "cap-1", srv, func(in *workflows.CoordinationInput) {
			two := 2
			in.Config.Orchestrator.MaxNewAnswersGlobal = &two
		}, "agent_a", "agent_b", "agent_c")
		require.Equal(t, coord.StatusConsensus, res.Status)
		require.Empty(t, res.FailedAgents)
		require.Equal(t, map[string]int{"agent_a": 3}, res.Votes)
		require.Equal(t, contract.ErrTypeAnswerRefused, fencedAs(t, "cap-1", "agent_c", 1))
		snap, err := session.Load(ctx, subStore(st, "cap-1"))
		require.NoError(t, err)
		answers := 0
		for _, a := range snap.Agents {
			answers += len(a.Answers)
		}
		require.Equal(t, 2, answers, "the global cap holds")
		requireNoDuplicateSteps(t, subStore(st, "cap-1"))
		agreesWithWorkflow(t, "cap-1", res)
	})

	// agent_a answers, then overruns its second step (it keeps writing
	// files past the round timeout); the round timeout ends that turn, and
	// in its next step it votes.
	t.Run("round timeout", func(t *testing.T) {
		var overran atomic.Bool
		srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			agent := agentOf(r.Model)
			if r.Contains("the time for this round is over") {
				overran.Store(true)
			}
			switch {
			case presenting(r):
				return call("new_answer", map[string]string{"content": "FINAL by " + agent})
			case agent == "agent_a" && r.HasTool("vote") && (!overran.Load() || r.Contains("TIME CHECK")):
				// Stubborn within the step: it keeps writing past the
				// wrap-up and the refusals, until the step is ended.
				rep := call("write_file", map[string]string{"path": fmt.Sprintf("f%03d.md", len(r.Messages)), "content": "more"})
				rep.ToolCalls[0].ID = fmt.Sprintf("w%03d", len(r.Messages))
				rep.Delay = 300 * time.Millisecond
				return rep
			case r.HasTool("vote") && r.Contains("<agent2."):
				return call("vote", map[string]string{"agent_id": "agent2", "reason": "clearest"})
			case r.HasTool("vote"):
				rep := call("list_files", map[string]string{})
				rep.Delay = 50 * time.Millisecond
				return rep
			}
			return call("new_answer", map[string]string{"content": "answer of " + agent})
		}))
		res := run(t, "rt-1", srv, func(in *workflows.CoordinationInput) {
			in.Config.Orchestrator.SubsequentRoundTimeoutSeconds = 2
			in.Config.Orchestrator.RoundTimeoutGraceSeconds = 1
		}, "agent_a", "agent_b")
		require.True(t, overran.Load(), "agent_a overran its step")
		require.Equal(t, coord.StatusConsensus, res.Status)
		require.Empty(t, res.FailedAgents, "a round timeout ends the turn, not the agent")
		require.Equal(t, map[string]int{"agent_b": 2}, res.Votes)
		require.Equal(t, contract.ErrTypeTurnEnded, fencedAs(t, "rt-1", "agent_a", 2))
		requireNoDuplicateSteps(t, subStore(st, "rt-1"))
		agreesWithWorkflow(t, "rt-1", res)
	})
}

//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// startLoggedWorker runs `conclave worker` with its output in logPath.
func startLoggedWorker(t *testing.T, bin, address, storageURL, logPath string) {
	t.Helper()
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = logFile.Close() }) // after the worker is killed: cleanups run last-in first-out
	startWorkerTo(t, bin, address, storageURL, logFile)
}

// TestWorkersWithDifferentStorage runs two `conclave worker` processes on
// one task queue, each with its own --storage directory. The session is
// created in the store of the worker that ran InitSession; every later
// attempt the other worker takes is refused (retryably, naming both
// locations, in its log) and retried until the right worker runs it, so
// the session completes with every file in one store and none in the other.
func TestWorkersWithDifferentStorage(t *testing.T) {
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	dir := t.TempDir()
	dirs := []string{filepath.Join(dir, "store-1"), filepath.Join(dir, "store-2")}
	logs := []string{filepath.Join(dir, "worker-1.log"), filepath.Join(dir, "worker-2.log")}
	// Every agent's first model call fails (503): its retry goes through the
	// task queue, where either worker may take it, rather than to the
	// worker that scheduled it (eager activities).
	var mu sync.Mutex
	failed := map[string]bool{}
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if a := agentOf(r.Model); !failed[a] {
			failed[a] = true
			return llmtest.Reply{Status: 503, Error: "busy"}
		}
		return taskModel(r)
	}))
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, data)
			}
		}
	})
	for i := range dirs {
		startLoggedWorker(t, bin, temporal.HostPort, dirs[i], logs[i])
	}

	c := temporal.Client(t)
	ctx := context.Background()
	cfg := team(t, srv.URL(), "agent_a", "agent_b", "agent_c", "agent_d")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "two-stores", TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "TASK-ONE: name a colour.", Config: cfg})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var res workflows.CoordinationResult
	require.NoError(t, run.Get(wctx, &res))
	require.Equal(t, coord.StatusConsensus, res.Status)
	require.Equal(t, "FINAL for ONE: answer to ONE", res.FinalAnswer)

	stores := make([]storage.Store, 2)
	for i, d := range dirs {
		stores[i], err = storage.NewLocal(d)
		require.NoError(t, err)
	}
	owner := 0
	if !strings.HasPrefix(res.Session, stores[0].Location()+"/") {
		owner = 1
	}
	other := 1 - owner
	require.Equal(t, stores[owner].Location()+"/two-stores", res.Session)

	sess := storage.Sub(stores[owner], "two-stores")
	snap, err := session.Load(ctx, sess)
	require.NoError(t, err)
	require.Empty(t, snap.Problems)
	answered := map[string]bool{}
	for _, a := range snap.Agents {
		answered[a.ID] = a.AnswerCount > 0
	}
	for _, a := range snap.Agents {
		// An agent whose first step was delayed may vote without answering,
		// and which answer it prefers depends on what it had seen; but every
		// vote is for an answer stored in this one store (a split session
		// had votes for answers held by the other store).
		require.LessOrEqual(t, a.AnswerCount, 1, a.ID)
		require.NotNil(t, a.Vote, "%s: %+v; result %+v", a.ID, a.Agent, res)
		require.True(t, answered[a.Vote.Target], "%s voted for %s, whose answer is not in the session's store", a.ID, a.Vote.Target)
	}
	for _, k := range []string{session.InfoKey, session.ConfigKey, session.StatusKey, session.FinalAnswerKey} {
		_, err := sess.Get(ctx, k)
		require.NoError(t, err, k)
	}
	stray, err := stores[other].List(ctx, "")
	require.NoError(t, err)
	require.Empty(t, stray, "the other worker wrote into its own store")

	log, err := os.ReadFile(logs[other])
	require.NoError(t, err)
	require.Contains(t, string(log), "refusing a session this worker's storage does not hold",
		"the other worker took no attempt (or did not log its refusal)")
	require.Contains(t, string(log), stores[other].Location())
	require.Contains(t, string(log), stores[owner].Location())
	t.Logf("refusals in the other worker's log: %d", strings.Count(string(log), "refusing a session"))
}

//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
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

// startWorker runs `conclave worker` in its own process group, with extra
// flags if given.
func startWorker(t *testing.T, bin, address, storageURL string, extra ...string) *exec.Cmd {
	t.Helper()
	return startWorkerTo(t, bin, address, storageURL, os.Stderr, extra...)
}

// startWorkerTo is startWorker with the worker's output going to out.
func startWorkerTo(t *testing.T, bin, address, storageURL string, out io.Writer, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"worker", "--address", address, "--storage", storageURL}, extra...)...)
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// replaceWorkerWhenHung waits until a model call hangs (inFlight), then
// SIGKILLs the worker in the middle of it and starts a new one; what
// names the call for the failure message.
func replaceWorkerWhenHung(t *testing.T, inFlight <-chan struct{}, worker *exec.Cmd, bin, address, storageURL, what string) {
	t.Helper()
	select {
	case <-inFlight:
	case <-time.After(2 * time.Minute):
		t.Fatal(what)
	}
	require.NoError(t, syscall.Kill(-worker.Process.Pid, syscall.SIGKILL))
	_ = worker.Wait()
	startWorker(t, bin, address, storageURL)
}

// TestWorkerKilledMidStep kills the worker process (SIGKILL) while an
// agent's second model call is in flight; a second worker finishes the
// session. The first model call of that step is not repeated, its file
// write is rebuilt from the checkpoint, and nothing is lost or duplicated.
func TestWorkerKilledMidStep(t *testing.T) {
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	st, url := s3Store(t, minio, "kill")

	inFlight := make(chan struct{}, 1)
	isSecondTurnOfA := func(r llmtest.Request) bool {
		return agentOf(r.Model) == "agent_a" && r.Last().Role == "tool" && !r.Contains("<agent1.")
	}
	srv := llmtest.Start(t,
		// agent_a's second call hangs until its worker is killed.
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			inFlight <- struct{}{}
			return llmtest.Reply{Delay: 10 * time.Minute}
		}).If(isSecondTurnOfA).Once(),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			agent := agentOf(r.Model)
			switch {
			case strings.Contains(r.Messages[0].Content, "present the final answer"):
				return call("new_answer", map[string]string{"content": "FINAL by " + agent})
			case isSecondTurnOfA(r):
				return call("new_answer", map[string]string{"content": "A's answer, see notes.md"})
			case agent == "agent_a" && !r.Contains("<agent1."):
				return call("write_file", map[string]string{"path": "notes.md", "content": "# A's notes"})
			case r.HasTool("vote") && r.Contains("<agent1."):
				return call("vote", map[string]string{"agent_id": "agent1", "reason": "A's is best"})
			case r.HasTool("vote") && r.Contains("END-"+agent):
				return call("vote", map[string]string{"agent_id": "agent2", "reason": "B's for now"})
			default:
				return call("new_answer", map[string]string{"content": longAnswer(agent)})
			}
		}),
	)
	c := temporal.Client(t)
	first := startWorker(t, bin, temporal.HostPort, url)

	ctx := context.Background()
	cfg := team(t, srv.URL(), "agent_a", "agent_b", "agent_c")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "kill-1", TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "Create a website about the Beatles.", Config: cfg, StepHeartbeatSeconds: 3})
	require.NoError(t, err)

	replaceWorkerWhenHung(t, inFlight, first, bin, temporal.HostPort, url, "agent_a's second model call never arrived")

	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var res workflows.CoordinationResult
	require.NoError(t, run.Get(wctx, &res))
	require.Equal(t, coord.StatusConsensus, res.Status)
	require.Equal(t, "agent_a", res.Winner)

	// agent_a's first call (the prompt alone) completed before the kill and
	// was never made again; its second call was made twice (the first one
	// never returned).
	firstCalls, secondCalls := 0, 0
	for _, r := range srv.Requests() {
		if agentOf(r.Model) != "agent_a" || r.Contains("<agent1.") {
			continue
		}
		switch {
		case len(r.Messages) == 2:
			firstCalls++
		case isSecondTurnOfA(r):
			secondCalls++
		}
	}
	require.Equal(t, 1, firstCalls, "a completed model call was repeated")
	require.Equal(t, 2, secondCalls)

	sess := storage.Sub(st, "kill-1")
	notes, err := sess.Get(ctx, "agents/agent_a/001/workspace/notes.md")
	require.NoError(t, err, "the write made before the kill is in the stored workspace")
	require.Equal(t, "# A's notes", string(notes))
	requireNoDuplicateSteps(t, sess)
	requireHistoryKeysStored(t, c, sess, "kill-1")
}

// requireNoDuplicateSteps checks every agent's step folders are 001..N,
// each holding exactly one action file, or none when its launch was fenced
// off.
func requireNoDuplicateSteps(t *testing.T, st storage.Store) {
	t.Helper()
	snap, err := session.Load(context.Background(), st)
	require.NoError(t, err)
	require.Empty(t, snap.Problems)
	keys, err := st.List(context.Background(), session.AgentsPrefix)
	require.NoError(t, err)
	for _, a := range snap.Agents {
		for n := 1; n <= a.LatestStep; n++ {
			actions := 0
			for _, f := range []string{"answer.json", "vote.json", "stop.json"} {
				for _, k := range keys {
					if k == session.StepPrefix(a.ID, n)+f {
						actions++
					}
				}
			}
			var marker session.LaunchFile
			if actions == 0 && session.ReadJSON(context.Background(), st, session.LaunchKey(a.ID, n), &marker) == nil && marker.Fenced {
				continue // a launch the workflow fenced off: its number is not reused
			}
			require.Equal(t, 1, actions, "%s step %d", a.ID, n)
		}
		// Folders beyond the last step are steps the workflow gave up
		// (fenced: a restart, a round timeout) and hold no action.
		for n := a.LatestStep + 1; ; n++ {
			var in []string
			for _, k := range keys {
				if strings.HasPrefix(k, session.StepPrefix(a.ID, n)) {
					in = append(in, k)
				}
			}
			if len(in) == 0 {
				break
			}
			var marker session.LaunchFile
			require.NoError(t, session.ReadJSON(context.Background(), st, session.LaunchKey(a.ID, n), &marker), "a step folder beyond the last: %v", in)
			require.True(t, marker.Fenced, "a step folder beyond the last that is not fenced: %v", in)
			for _, k := range in {
				require.False(t, strings.HasSuffix(k, "/answer.json") || strings.HasSuffix(k, "/vote.json") || strings.HasSuffix(k, "/stop.json"),
					"an action in a fenced folder: %s", k)
			}
		}
	}
}

// requireHistoryKeysStored checks that every step result recorded in the
// workflow history points at a stored file.
func requireHistoryKeysStored(t *testing.T, c client.Client, st storage.Store, id string) {
	t.Helper()
	iter := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	seen := 0
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		done := ev.GetActivityTaskCompletedEventAttributes()
		if done == nil {
			continue
		}
		for _, p := range done.GetResult().GetPayloads() {
			var r contract.AgentStepResult
			if json.Unmarshal(p.GetData(), &r) != nil || r.Key == "" || r.Agent == "" {
				continue
			}
			_, err := st.Get(context.Background(), r.Key)
			require.NoError(t, err, fmt.Sprintf("history names %s", r.Key))
			seen++
		}
	}
	require.Positive(t, seen)
}

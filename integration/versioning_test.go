//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// TestRolloutPinsSessions rolls out a new build the way docs/operations.md
// says: build A is the deployment's first worker and makes itself current;
// while a session runs on A, build B starts and the operator makes it
// current with the Temporal CLI. The running session finishes on A, a new
// one started with `temporal workflow start` runs on B, and each history's
// workflow tasks were all completed by its own build, continue-as-new
// included.
func TestRolloutPinsSessions(t *testing.T) {
	bin := conclaveBinary(t)
	cli := testenv.FindBinary(t, "Temporal CLI", "CONCLAVE_TEMPORAL_BIN", "temporal")
	temporal := testenv.StartTemporal(t)
	storageURL := filepath.Join(t.TempDir(), "sessions")

	inFlight, release := make(chan struct{}, 1), make(chan struct{})
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		switch {
		case strings.Contains(r.Messages[0].Content, "present the final answer"):
			return call("new_answer", map[string]string{"content": "FINAL"})
		case r.HasTool("vote") && r.Contains("<agent1."):
			return call("vote", map[string]string{"agent_id": "agent1", "reason": "the only answer"})
		case r.Contains("slow task") && !r.Contains("<agent1."):
			// The first session's first answer waits for the rollout.
			select {
			case inFlight <- struct{}{}:
			default:
			}
			<-release
		}
		return call("new_answer", map[string]string{"content": "an answer"})
	}))
	releaseOld := sync.OnceFunc(func() { close(release) })
	defer releaseOld()
	input := func(task string) string {
		in := fmt.Sprintf(`{"task":%q,"config":{"agents":[{"id":"agent_a","backend":{"type":"openai","model":"m-agent_a","base_url":%q}}]}}`,
			task, srv.URL())
		require.True(t, json.Valid([]byte(in)))
		return in
	}
	c := temporal.Client(t)
	ctx := context.Background()
	// deployment is `temporal worker deployment describe`, empty until the
	// deployment's first worker polled.
	deployment := func() string {
		out, _, code := runBin(t, cli, "worker", "deployment", "describe", "--address", temporal.HostPort, "--name", worker.DefaultDeployment)
		if code != 0 {
			return ""
		}
		return out
	}

	startWorker(t, bin, temporal.HostPort, storageURL, "--build-id", "build-a")
	// No operator step: the first build of the deployment became current.
	require.Eventually(t, func() bool { return currentBuild(deployment()) == "build-a" }, time.Minute, 200*time.Millisecond)

	old, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "on-a", TaskQueue: worker.DefaultTaskQueue},
		// It continues as new after every step, so runs start after the
		// rollout too.
		contract.CoordinationName, workflows.CoordinationInput{Task: "slow task", Config: team(t, srv.URL(), "agent_a"), MaxStepsBeforeContinue: 1})
	require.NoError(t, err)
	select {
	case <-inFlight:
	case <-time.After(2 * time.Minute):
		t.Fatal("the first session's model call never arrived")
	}

	// Build B joins (its id from the environment) without taking over...
	t.Setenv("CONCLAVE_BUILD_ID", "build-b")
	startWorker(t, bin, temporal.HostPort, storageURL)
	require.Eventually(t, func() bool { return strings.Contains(deployment(), "build-b") }, time.Minute, 200*time.Millisecond)
	require.Equal(t, "build-a", currentBuild(deployment()), "a second build made itself current")
	// ...until the operator makes it current.
	_, errs, code := runBin(t, cli, "worker", "deployment", "set-current-version", "--address", temporal.HostPort,
		"--deployment-name", worker.DefaultDeployment, "--build-id", "build-b", "--yes")
	require.Equal(t, 0, code, errs)

	_, errs, code = runBin(t, cli, "workflow", "start", "--address", temporal.HostPort, "--type", contract.CoordinationName,
		"--task-queue", worker.DefaultTaskQueue, "--workflow-id", "on-b", "--input", input("quick task"))
	require.Equal(t, 0, code, errs)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var res workflows.CoordinationResult
	require.NoError(t, c.GetWorkflow(wctx, "on-b", "").Get(wctx, &res))
	require.Equal(t, coord.StatusConsensus, res.Status)

	// `temporal workflow describe` shows the session pinned to its build.
	out, errs, code := runBin(t, cli, "workflow", "describe", "--address", temporal.HostPort, "--workflow-id", "on-b")
	require.Equal(t, 0, code, errs)
	t.Logf("temporal workflow describe --workflow-id on-b:\n%s", out)
	info := out[strings.Index(out, "Versioning Info:"):]
	require.Regexp(t, `Behavior\s+Pinned`, info)
	require.Regexp(t, `BuildId\s+build-b`, info)

	// The query docs/operations.md gives for what still runs on the old build.
	require.Eventually(t, func() bool {
		out, _, code := runBin(t, cli, "workflow", "list", "--address", temporal.HostPort, "--query",
			`TemporalWorkerDeploymentVersion="conclave:build-a" AND ExecutionStatus="Running"`)
		return code == 0 && strings.Contains(out, "on-a") && !strings.Contains(out, "on-b")
	}, 30*time.Second, 200*time.Millisecond)

	releaseOld()
	require.NoError(t, old.Get(wctx, &res))
	require.Equal(t, coord.StatusConsensus, res.Status)

	// The latest run of the old session began after the rollout, by
	// continue-as-new, and still ran on its build.
	require.Equal(t, []string{"build-a"}, taskBuilds(t, c, "on-a"), "the running session left its build")
	first, err := c.GetWorkflowHistory(ctx, "on-a", "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).Next()
	require.NoError(t, err)
	require.NotEmpty(t, first.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId(), "the session never continued as new")
	require.Equal(t, []string{"build-b"}, taskBuilds(t, c, "on-b"), "the new session did not start on the current build")
}

// currentBuild reads the current version's build id from
// `temporal worker deployment describe`.
func currentBuild(describe string) string {
	for _, line := range strings.Split(describe, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "CurrentVersionBuildID" {
			return f[1]
		}
	}
	return ""
}

// taskBuilds lists the build ids that completed the workflow's tasks, as its
// history records them, in order with repeats collapsed.
func taskBuilds(t *testing.T, c client.Client, id string) []string {
	t.Helper()
	var builds []string
	iter := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		a := e.GetWorkflowTaskCompletedEventAttributes()
		if a == nil {
			continue
		}
		require.Equal(t, enums.VERSIONING_BEHAVIOR_PINNED, a.GetVersioningBehavior(), "event %d", e.GetEventId())
		b := a.GetDeploymentVersion().GetBuildId()
		if b == "" {
			b = "(none)"
		}
		if len(builds) == 0 || builds[len(builds)-1] != b {
			builds = append(builds, b)
		}
	}
	return builds
}

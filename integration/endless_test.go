//go:build integration

package integration

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// Issue 22, item 1: a shared `conclave worker` went from 188 MB to 3.1 GB
// in 60 s under a model whose reply never ends, and only the orchestrator
// timeout (1,800 s) stopped the session. Now every agent's reply is
// stopped at the reply limit, each agent fails naming it, the session ends
// at once, and the worker's resident memory stays within the formula of
// docs/operations.md (concurrency × a few times the reply limit) — here
// measured generously, with a 4 MiB limit and three agents streaming at
// once.
func TestWorkerUnderEndlessRepliesStaysBounded(t *testing.T) {
	const replyLimit = 4 << 20
	t.Setenv("CONCLAVE_MAX_REPLY_BYTES", strconv.Itoa(replyLimit))
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	c := temporal.Client(t)
	endless := llmtest.Start(t, llmtest.Text(strings.Repeat("an endless reply ", 256)).Forever())
	w := startWorker(t, bin, temporal.HostPort, t.TempDir())

	pid := w.Process.Pid
	baseline := residentBytes(t, pid)
	peak := baseline
	stop := make(chan struct{})
	sampled := make(chan int64)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				sampled <- peak
				return
			case <-tick.C:
				if rss := residentBytes(t, pid); rss > peak {
					peak = rss
				}
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := team(t, endless.URL(), "agent_a", "agent_b", "agent_c")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "endless-replies", TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "Say something.", Config: cfg})
	require.NoError(t, err)
	begin := time.Now()
	var res workflows.CoordinationResult
	err = run.Get(ctx, &res)
	close(stop)
	peak = <-sampled
	require.Error(t, err, "every agent's reply is endless: the session fails")
	require.Contains(t, err.Error(), "reply bytes limit")
	t.Logf("session ended after %s; worker resident memory %d MiB at start, %d MiB at peak (reply limit %d MiB, 3 agents)",
		time.Since(begin).Round(time.Second), baseline>>20, peak>>20, replyLimit>>20)
	// Formula: 3 agents × ~3 × 4 MiB = 36 MiB, plus transcripts and the
	// runtime's slack; 256 MiB is generous and far below unbounded growth.
	require.Less(t, peak-baseline, int64(256<<20))
	// Each agent was told once, then failed: two calls each.
	require.Equal(t, 6, endless.Count())
}

// residentBytes is a process's resident set size (Linux /proc).
func residentBytes(t *testing.T, pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc to measure memory: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Skip("no VmRSS in /proc status")
	return 0
}

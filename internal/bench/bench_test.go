//go:build integration

package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/devserver"
	"github.com/conclave-ai/conclave/internal/testenv"
)

// TestRunSmall runs every measurement at a small scale on real servers and
// checks the report is consistent with what was run. It asserts no timing:
// only what must hold on any machine.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Temporal and MinIO")
	}
	// Run finds the same tools; without them the test skips (or, with the
	// variables set, fails) the way every server test does.
	testenv.FindBinary(t, "Temporal CLI", devserver.BinaryEnv, "temporal")
	testenv.FindBinary(t, "MinIO", MinIOBinaryEnv, "minio")
	var progress bytes.Buffer
	rep, err := Run(t.Context(), Options{
		Latency:     500 * time.Millisecond,
		Sessions:    1,
		Concurrency: []int{1, 4},
		Progress:    &progress,
	})
	require.NoError(t, err, progress.String())
	t.Log(progress.String())

	// A session cannot be faster than its model calls: three rounds of
	// calls (answers, votes, presentation).
	require.GreaterOrEqual(t, rep.ModelTimeMS, 3*500.0)
	require.Greater(t, rep.OverheadRatio, 1.0)
	require.Greater(t, rep.BaselineRatio, 0.0)
	require.Equal(t, 6, rep.StepOverheadMS.N, "three agents, two steps each")
	require.Positive(t, rep.StepOverheadMS.P50)
	require.GreaterOrEqual(t, rep.StepOverheadMS.P95, rep.StepOverheadMS.P50)
	b := rep.StepBreakdownMS
	require.Equal(t, 6, b.BeforeModel.N)
	require.Positive(t, b.BeforeModel.P50, "a step loads the session before its model call")
	require.Positive(t, b.AfterModel.P50, "and saves it after")

	require.Len(t, rep.Throughput, 2)
	for _, tp := range rep.Throughput {
		require.Zero(t, tp.TimedOut+tp.Failed, "concurrency %d", tp.Concurrency)
		require.Positive(t, tp.SessionsPerMinute)
		require.Positive(t, tp.PeakRSSMB)
	}

	iv := rep.InjectVsRestart
	require.NotNil(t, iv)
	require.Positive(t, iv.Inject.Tokens)
	// Restart relaunches the steps a new answer interrupts: more calls,
	// each with the whole context again.
	require.Greater(t, iv.Restart.ModelCalls, iv.Inject.ModelCalls)
	require.Less(t, iv.Inject.Tokens, iv.Restart.Tokens)
	require.Less(t, iv.TokenRatio, 1.0)
}

//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/serve"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// BenchmarkServe measures, in one run on the same dev server, worker and
// scripted team, the time from a streamed chat request to its first byte,
// and what serve adds to a whole session: the same task started directly
// (ExecuteWorkflow, then the result) against through serve (POST, stream
// to [DONE]). Run it with
//
//	go test -tags integration ./integration -run '^$' -bench BenchmarkServe -benchtime 10x
func BenchmarkServe(b *testing.B) {
	env := startServeEnv(b)
	base := env.serveInProcess(b, 1<<10, keyAlice)
	path := filepath.Join(b.TempDir(), "team.yaml")
	require.NoError(b, os.WriteFile(path, []byte(env.teamYAML), 0o600))
	team, _, err := serve.LoadTeam(path)
	require.NoError(b, err)
	body := []byte(`{"model":"team","stream":true,"messages":[{"role":"user","content":"benchmark task"}]}`)
	var direct, served, firstByte time.Duration
	b.ResetTimer()
	viaDirect := func() {
		start := time.Now()
		run, err := env.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{TaskQueue: worker.DefaultTaskQueue},
			contract.CoordinationName, workflows.CoordinationInput{Task: "benchmark task", Config: team.Config})
		require.NoError(b, err)
		require.NoError(b, run.Get(context.Background(), nil))
		direct += time.Since(start)
	}
	viaServe := func() {
		start := time.Now()
		req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
		require.NoError(b, err)
		req.Header.Set("Authorization", "Bearer "+secretOf(keyAlice))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(b, err)
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		_, err = r.ReadByte()
		require.NoError(b, err)
		firstByte += time.Since(start)
		var rest strings.Builder
		_, err = r.WriteTo(&rest)
		require.NoError(b, err)
		served += time.Since(start)
		require.Contains(b, rest.String(), "FINAL ANSWER from the team")
		require.True(b, strings.HasSuffix(rest.String(), "data: [DONE]\n\n"))
	}
	for i := 0; i < b.N; i++ {
		// Alternate which goes first, so neither always meets a warmer server.
		if i%2 == 0 {
			viaDirect()
			viaServe()
		} else {
			viaServe()
			viaDirect()
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(firstByte.Milliseconds())/n, "first-byte-ms")
	b.ReportMetric(float64(direct.Milliseconds())/n, "direct-ms")
	b.ReportMetric(float64(served.Milliseconds())/n, "serve-ms")
	b.ReportMetric(served.Seconds()/direct.Seconds(), "serve/direct")
}

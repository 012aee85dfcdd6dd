package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/pipelinetest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
)

// TestPipelineScenarioCLI runs a five-step scenario with the conclave
// binary against a real dev server, a worker storing in MinIO and the
// scripted model: step 3 fails, then resume finishes 3-5 without running
// 1-2 again, on the agent its --config names (another endpoint).
func TestPipelineScenarioCLI(t *testing.T) {
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	agent := pipelinetest.NewAgent("s3")
	srv := llmtest.Start(t, agent.Rule())
	st, _ := s3Store(t, minio, "runs")
	c := temporal.Client(t)
	w := worker.New(c, worker.Options{Store: st, Namespace: "default", HeartbeatEvery: time.Second})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	dir := t.TempDir()
	scenario := filepath.Join(dir, "scenario")
	require.NoError(t, pipelinetest.WriteScenario(scenario, 5, 300))
	agentYAML := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(agentYAML, []byte(fmt.Sprintf(
		"agent:\n  id: builder\n  backend: {type: openai, model: m-builder, base_url: %s}\n", srv.URL())), 0o644))
	bin := conclaveBinary(t)
	addr := "--address=" + temporal.HostPort
	ctx := context.Background()

	out, errOut, code := runBin(t, bin, "pipeline", "run", addr, "--scenario", scenario, "--config", agentYAML, "--poll", "200ms", "Build the service")
	require.Equal(t, 1, code, "a failed step exits 1\nstdout:\n%s\nstderr:\n%s", out, errOut)
	runID := strings.SplitN(out, "\n", 2)[0]
	require.True(t, strings.HasPrefix(runID, "pipeline-"), "the run id comes first: %q", out)
	require.Contains(t, out, "step 3 · s3")
	require.Contains(t, errOut, "conclave pipeline resume "+runID)

	res := readResult(t, ctx, st, runID)
	require.Equal(t, "failed", res.Status)
	require.Equal(t, []string{"s1:completed", "s2:completed", "s3:failed", "s4:not_run", "s5:not_run"}, stepStatuses(res))
	require.Equal(t, []string{"steps/001-s1/workspace/s1.md"}, res.Steps[0].Evidence)
	require.Equal(t, "s3: the check failed", res.Steps[2].Error)
	for _, s := range res.Steps[:3] {
		require.Positive(t, s.DurationMs, s.Name)
		require.Positive(t, s.Usage.InputTokens, s.Name)
	}
	_, err := st.Get(ctx, runID+"/steps/003-s3/workspace/s3.md")
	require.NoError(t, err, "a failed step's files are kept")

	// status prints the same steps.
	out, _, code = runBin(t, bin, "pipeline", "status", addr, "--json", runID)
	require.Equal(t, 0, code, out)
	var live contract.PipelineResult
	require.NoError(t, json.Unmarshal([]byte(out), &live))
	require.Equal(t, stepStatuses(res), stepStatuses(live))

	before := srv.Count()
	agent.SetFailing() // the user fixed the cause
	// …and moved the agent to another endpoint: resume --config alone keeps
	// the steps and swaps the agent.
	srv2 := llmtest.Start(t, agent.Rule())
	agentYAML2 := filepath.Join(dir, "agent2.yaml")
	require.NoError(t, os.WriteFile(agentYAML2, []byte(fmt.Sprintf(
		"agent:\n  id: builder\n  backend: {type: openai, model: m-builder, base_url: %s}\n", srv2.URL())), 0o644))
	out, errOut, code = runBin(t, bin, "pipeline", "resume", addr, "--config", agentYAML2, "--poll", "200ms", runID)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	newID := strings.SplitN(out, "\n", 2)[0]
	require.NotEqual(t, runID, newID)
	res = readResult(t, ctx, st, newID)
	require.Equal(t, "completed", res.Status)
	require.Equal(t, []string{"s1:completed", "s2:completed", "s3:completed", "s4:completed", "s5:completed"}, stepStatuses(res))
	require.True(t, res.Steps[0].Reused && res.Steps[1].Reused && !res.Steps[2].Reused)
	require.Equal(t, before, srv.Count(), "the resumed run used the endpoint of --config")
	for _, req := range srv2.Requests() {
		require.NotContains(t, []string{"s1", "s2"}, pipelinetest.StepOf(req), "resume ran a completed step again")
	}
	require.Equal(t, 6, srv2.Count(), "two model calls for each of s3, s4, s5")
	// Step 5 saw the files of every earlier step, reused ones included.
	for _, f := range []string{"s1.md", "s2.md", "s3.md", "s4.md", "s5.md"} {
		_, err := st.Get(ctx, newID+"/steps/005-s5/workspace/"+f)
		require.NoError(t, err, f)
	}
}

func readResult(t *testing.T, ctx context.Context, st interface {
	Get(context.Context, string) ([]byte, error)
}, runID string) contract.PipelineResult {
	t.Helper()
	data, err := st.Get(ctx, runID+"/result.json")
	require.NoError(t, err)
	var r contract.PipelineResult
	require.NoError(t, json.Unmarshal(data, &r))
	return r
}

func stepStatuses(r contract.PipelineResult) []string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, s.Name+":"+string(s.Status))
	}
	return out
}

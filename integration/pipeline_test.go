//go:build integration

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
	"github.com/conclave-ai/conclave/engine/storage"
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
	minio := testenv.StartMinIO(t)
	agent := pipelinetest.NewAgent("s3")
	st, _ := s3Store(t, minio, "runs")
	e := startPipelineEnv(t, st, agent, 5, 300)
	srv, dir, scenario, agentYAML, bin, addr := e.srv, e.dir, e.scenario, e.agentYAML, e.bin, e.addr
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

// pipelineEnv is a dev server, a worker storing in st, the scripted model
// playing agent, an n-step scenario and the one-agent config that reaches
// the model, for the conclave binary to run.
type pipelineEnv struct {
	srv                                 *llmtest.Server
	dir, scenario, agentYAML, bin, addr string
}

func startPipelineEnv(t *testing.T, st storage.Store, agent *pipelinetest.Agent, steps, promptBytes int) pipelineEnv {
	t.Helper()
	temporal := testenv.StartTemporal(t)
	e := pipelineEnv{srv: llmtest.Start(t, agent.Rule()), dir: t.TempDir(), bin: conclaveBinary(t), addr: "--address=" + temporal.HostPort}
	w := worker.New(temporal.Client(t), worker.Options{Store: st, Namespace: "default", HeartbeatEvery: time.Second})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	e.scenario = filepath.Join(e.dir, "scenario")
	require.NoError(t, pipelinetest.WriteScenario(e.scenario, steps, promptBytes))
	e.agentYAML = filepath.Join(e.dir, "agent.yaml")
	require.NoError(t, os.WriteFile(e.agentYAML, []byte(fmt.Sprintf(
		"agent:\n  id: builder\n  backend: {type: openai, model: m-builder, base_url: %s}\n", e.srv.URL())), 0o644))
	return e
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

// TestPipelineRunIDReused starts a run with --id, then the same id again
// with another input: a pipeline run belongs to the workflow that created
// it, so the second start is refused at init, makes no model call and
// changes nothing stored, instead of replaying the first run's steps.
// Resuming the first run (a new run id) still works.
func TestPipelineRunIDReused(t *testing.T) {
	st, err := storage.NewLocal(t.TempDir())
	require.NoError(t, err)
	e := startPipelineEnv(t, st, pipelinetest.NewAgent(), 2, 100)
	srv, bin, addr := e.srv, e.bin, e.addr
	ctx := context.Background()
	run := func(input string) (string, string, int) {
		return runBin(t, bin, "pipeline", "run", addr, "--scenario", e.scenario, "--config", e.agentYAML, "--id", "p1", "--poll", "200ms", input)
	}

	out, errOut, code := run("Temporal")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	calls := srv.Count()
	require.Positive(t, calls)
	before := map[string]string{}
	keys, err := st.List(ctx, "p1/")
	require.NoError(t, err)
	for _, k := range keys {
		data, err := st.Get(ctx, k)
		require.NoError(t, err)
		before[k] = string(data)
	}
	require.Contains(t, before, "p1/owner.json")

	out, errOut, code = run("Bananas")
	require.NotEqual(t, 0, code, "a reused run id is refused\nstdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out+errOut, `pipeline run "p1"`)
	require.Contains(t, out+errOut, "belongs to workflow p1")
	require.Equal(t, calls, srv.Count(), "the refused run made no model call")
	after := map[string]string{}
	keys, err = st.List(ctx, "p1/")
	require.NoError(t, err)
	for _, k := range keys {
		data, err := st.Get(ctx, k)
		require.NoError(t, err)
		after[k] = string(data)
	}
	require.Equal(t, before, after, "nothing of the first run changed")
	require.Contains(t, after["p1/pipeline.json"], "Temporal")
	require.NotContains(t, after["p1/pipeline.json"], "Bananas")

	out, errOut, code = runBin(t, bin, "pipeline", "resume", addr, "--poll", "200ms", "p1")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	newID := strings.SplitN(out, "\n", 2)[0]
	res := readResult(t, ctx, st, newID)
	require.Equal(t, "completed", res.Status)
	require.True(t, res.Steps[0].Reused && res.Steps[1].Reused)
	require.Equal(t, calls, srv.Count(), "resume reused both completed steps")
}

//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
)

// TestWorkerMetrics runs a session on a worker started with
// --metrics-listen, then scrapes /metrics and checks that Conclave's
// counters moved by exactly what the session did: one model call per
// request the model server answered, the session's tokens, agent_a's cost
// at its configured price, one AgentStep outcome per step, one session by
// its final status; and that the SDK's worker metrics and the probes are
// served on the same port.
func TestWorkerMetrics(t *testing.T) {
	bin := conclaveBinary(t)
	server := testenv.StartTemporal(t)
	srv := llmtest.Start(t, llmtest.Func(script))
	dir := t.TempDir()
	cfg := teamYAML(t, dir, srv.URL(), "agent_a", "agent_b")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("prices:\n  m-agent_a: {input: 3, output: 15}\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	env := append(cleanEnv(), "TEMPORAL_ADDRESS="+server.HostPort)

	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	var workerOut lockedBuffer
	startProcess(t, bin, env, &workerOut, "worker", "--storage", filepath.Join(dir, "sessions"),
		"--metrics-listen", metricsAddr, "--log-format", "json")
	base := "http://" + metricsAddr
	eventually(t, time.Minute, "/readyz says ready", func() bool {
		code, _ := get(base + "/readyz")
		return code == http.StatusOK
	})
	code, body := get(base + "/healthz")
	require.Equal(t, http.StatusOK, code, body)

	cmd := exec.Command(bin, "run", "--config", cfg, "--id", "metrics-1", "--poll", "200ms", "Explain durable execution.")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "== consensus")
	t.Logf("run output:\n%s", out)

	cmd = exec.Command(bin, "status", "metrics-1")
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	var st struct {
		Agents map[string]struct {
			LatestStep int `json:"latest_step"`
		} `json:"agents"`
		Usage struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(out, &st), string(out))
	steps := 0
	for _, a := range st.Agents {
		steps += a.LatestStep
	}

	code, body = get(base + "/metrics")
	require.Equal(t, http.StatusOK, code)
	m := parseMetrics(t, body)
	t.Logf("scrape excerpt:\n%s%s%s", excerpt(body, "conclave_"), excerpt(body, "temporal_workflow_completed"),
		excerpt(body, "temporal_activity_execution_latency_seconds_count"))

	require.Equal(t, float64(srv.Count()), m.sum("conclave_model_calls_total", "outcome", "ok"), "one call counted per request answered")
	require.Zero(t, m.sum("conclave_model_calls_total", "outcome", "retryable"))
	require.Equal(t, float64(srv.Count()), m.sum("conclave_model_call_duration_seconds_count", "", ""))
	require.Equal(t, float64(st.Usage.InputTokens), m.sum("conclave_model_tokens_total", "type", "input"))
	require.Equal(t, float64(st.Usage.OutputTokens), m.sum("conclave_model_tokens_total", "type", "output"))

	// agent_a is priced, agent_b is not.
	var inA, outA, callsA float64
	for _, r := range srv.Requests() {
		if r.Model == "m-agent_a" {
			callsA++
		}
	}
	inA = m.sum("conclave_model_tokens_total", "type", "input", "model", "m-agent_a")
	outA = m.sum("conclave_model_tokens_total", "type", "output", "model", "m-agent_a")
	require.InDelta(t, (inA*3+outA*15)/1e6, m.sum("conclave_model_cost_usd_total", "model", "m-agent_a"), 1e-9)
	require.Zero(t, m.sum("conclave_model_cost_usd_total", "model", "m-agent_b"))
	require.Equal(t, float64(srv.Count())-callsA, m.sum("conclave_model_unpriced_calls_total", "model", "m-agent_b"))

	actions := m.sum("conclave_steps_total", "activity", "AgentStep", "outcome", "new_answer") +
		m.sum("conclave_steps_total", "activity", "AgentStep", "outcome", "vote")
	require.Equal(t, float64(steps), actions, "one outcome per agent step")
	require.Equal(t, 1.0, m.sum("conclave_steps_total", "activity", "Present", "outcome", "ok"))
	require.Equal(t, 1.0, m.sum("conclave_sessions_total", "workflow", "Coordination", "status", "consensus"))
	require.Positive(t, m.sum("temporal_activity_execution_latency_seconds_count", "", ""), "the SDK's worker metrics are served too")

	// The worker's log is one JSON object a line, the SDK's records included.
	for _, line := range strings.Split(strings.TrimSpace(workerOut.String()), "\n") {
		require.True(t, json.Valid([]byte(line)), "not JSON: %s", line)
	}
	require.Contains(t, workerOut.String(), `"msg":"Started Worker"`)
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type metrics map[string]*dto.MetricFamily

func parseMetrics(t *testing.T, text string) metrics {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err)
	return fams
}

// sum adds the samples of a metric whose labels match the given name/value
// pairs. Histogram _count and _sum names read the histogram.
func (m metrics) sum(name string, labels ...string) float64 {
	family, part := name, ""
	if _, ok := m[name]; !ok {
		for _, suffix := range []string{"_count", "_sum"} {
			if strings.HasSuffix(name, suffix) {
				family, part = strings.TrimSuffix(name, suffix), suffix
			}
		}
	}
	f, ok := m[family]
	if !ok {
		return 0
	}
	total := 0.0
next:
	for _, s := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if labels[i] == "" {
				continue
			}
			found := false
			for _, l := range s.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case s.Counter != nil:
			total += s.GetCounter().GetValue()
		case s.Gauge != nil:
			total += s.GetGauge().GetValue()
		case s.Histogram != nil && part == "_count":
			total += float64(s.GetHistogram().GetSampleCount())
		case s.Histogram != nil && part == "_sum":
			total += s.GetHistogram().GetSampleSum()
		}
	}
	if math.IsNaN(total) {
		return 0
	}
	return total
}

// excerpt keeps the lines of a scrape that start with prefix.
func excerpt(text, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) && !strings.Contains(l, "_bucket") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

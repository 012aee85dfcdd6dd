// Package bench measures what durability costs: Conclave sessions on a real
// Temporal dev server and MinIO, against the scripted model with a fixed
// latency per call, compared with the model time alone and with the same
// session driven in-process. `conclave bench` prints its Report.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Options say what to measure.
type Options struct {
	// Latency is the scripted model's time per call (default 1s).
	Latency time.Duration
	// Sessions is how many sessions the overhead and baseline take the
	// median of (default 3).
	Sessions int
	// Concurrency lists the numbers of concurrent sessions of the
	// throughput runs (default 1, 50, 200).
	Concurrency []int
	// WorkerCommand runs the worker as its own process, e.g.
	// {"/path/conclave", "worker"}, so its memory is measured alone; empty
	// runs it inside this process.
	WorkerCommand []string
	// WorkerConcurrency is the worker's limit of concurrent agent steps
	// (default 1000, enough for 200 three-agent sessions).
	WorkerConcurrency int
	// SessionTimeout is how long a throughput session may take before it
	// counts as timed out (default 10 minutes).
	SessionTimeout time.Duration
	// WorkerCPUProfile, with WorkerCommand, has the overhead measurement's
	// worker write a CPU profile there (go tool pprof).
	WorkerCPUProfile string
	// SkipInject leaves out the inject-vs-restart comparison.
	SkipInject bool
	// Progress receives one line per measurement; nil discards them.
	Progress io.Writer
}

// Quick is the reduced set of --quick: it runs in well under two minutes.
func Quick(o Options) Options {
	o.Sessions = 1
	o.Concurrency = []int{1, 20}
	return o
}

func (o *Options) defaults() {
	if o.Latency <= 0 {
		o.Latency = time.Second
	}
	if o.Sessions <= 0 {
		o.Sessions = 3
	}
	if len(o.Concurrency) == 0 {
		o.Concurrency = []int{1, 50, 200}
	}
	if o.WorkerConcurrency <= 0 {
		o.WorkerConcurrency = 1000
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 10 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// Report is `conclave bench --json`. Ratios are computed within one run.
type Report struct {
	Machine        Machine `json:"machine"`
	ModelLatencyMS float64 `json:"model_latency_ms"`
	// OverheadRatio is session wall time over model time alone (the union
	// of the session's model calls), the median over Sessions.
	OverheadRatio  float64 `json:"overhead_ratio"`
	SessionWallMS  float64 `json:"session_wall_ms"`
	ModelTimeMS    float64 `json:"model_time_ms"`
	StepOverheadMS Percent `json:"step_overhead_ms"`
	// StepBreakdownMS splits a step's time outside the model by phase.
	StepBreakdownMS StepBreakdown `json:"step_breakdown_ms"`
	// BaselineRatio is the Temporal session's wall time over the same
	// session run in-process (medians).
	BaselineRatio   float64          `json:"baseline_ratio"`
	BaselineWallMS  float64          `json:"baseline_wall_ms"`
	Throughput      []Throughput     `json:"throughput"`
	InjectVsRestart *InjectVsRestart `json:"inject_vs_restart,omitempty"`
	DurationS       float64          `json:"duration_s"`
}

// Machine is where the numbers were measured.
type Machine struct {
	CPUs      int     `json:"cpus"`
	CPU       string  `json:"cpu"`
	MemoryGB  float64 `json:"memory_gb"`
	OS        string  `json:"os"`
	GoVersion string  `json:"go_version"`
}

// Percent holds percentiles in milliseconds.
type Percent struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	N   int     `json:"n"`
}

// StepBreakdown is where agent steps spend the time outside the model:
// waiting for a worker, then before their first model call (loading the
// session), then after their last reply (checkpoint, saving the step,
// reporting completion).
type StepBreakdown struct {
	Dispatch    Percent `json:"dispatch"`
	BeforeModel Percent `json:"before_model"`
	AfterModel  Percent `json:"after_model"`
}

// Throughput is one concurrency level.
type Throughput struct {
	Concurrency       int     `json:"concurrency"`
	SessionsPerMinute float64 `json:"sessions_per_minute"`
	TimedOut          int     `json:"timed_out"`
	Failed            int     `json:"failed"`
	WallS             float64 `json:"wall_s"`
	PeakRSSMB         float64 `json:"peak_rss_mb"`
}

// InjectVsRestart compares update modes on one scenario; ratios are inject
// divided by restart. Tokens and calls are means over the sessions run,
// wall time the median.
type InjectVsRestart struct {
	TokenRatio float64  `json:"token_ratio"`
	WallRatio  float64  `json:"wall_ratio"`
	Inject     ModeCost `json:"inject"`
	Restart    ModeCost `json:"restart"`
}

// ModeCost is what one update mode spent on the scenario.
type ModeCost struct {
	Tokens     int64   `json:"tokens"`
	ModelCalls int     `json:"model_calls"`
	Cancelled  int     `json:"cancelled_calls"`
	WallMS     float64 `json:"wall_ms"`
}

// Run measures everything Options ask for.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	began := time.Now()
	e, err := startEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer e.close()
	rep := &Report{Machine: machine(), ModelLatencyMS: ms(o.Latency)}

	m, err := startModel(script{Default: o.Latency})
	if err != nil {
		return nil, err
	}
	defer m.close()
	cfg, err := teamConfig(m.url, map[string]string{"scheduling": "rounds"})
	if err != nil {
		return nil, err
	}
	if err := overhead(ctx, e, m, o, cfg, rep); err != nil {
		return nil, err
	}
	if err := throughput(ctx, e, m, o, cfg, rep); err != nil {
		return nil, err
	}
	if !o.SkipInject {
		if rep.InjectVsRestart, err = injectVsRestart(ctx, e, o); err != nil {
			return nil, err
		}
	}
	rep.DurationS = round2(time.Since(began).Seconds())
	return rep, nil
}

func machine() Machine {
	mc := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				mc.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %f kB", &kb); err == nil {
			mc.MemoryGB = round2(kb / 1024 / 1024)
		}
	}
	return mc
}

func percentiles(ds []time.Duration) Percent {
	if len(ds) == 0 {
		return Percent{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(q*float64(len(s)-1) + 0.5)
		return ms(s[i])
	}
	return Percent{P50: at(0.5), P95: at(0.95), N: len(s)}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return round2(float64(d) / float64(time.Millisecond)) }

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return round3(a / b)
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/conclave-ai/conclave/internal/bench"
)

func newBenchCmd() *cobra.Command {
	var (
		o           bench.Options
		asJSON      bool
		quick       bool
		concurrency string
		inProcess   bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the cost of durability on a real Temporal dev server and MinIO",
		Long: "Starts a Temporal dev server, MinIO and a scripted model with a fixed latency per\n" +
			"call (all from ./bin, on free loopback ports), runs three-agent sessions and reports\n" +
			"the overhead ratio (session wall time / model time), the per-step overhead, the\n" +
			"throughput at each concurrency, update_mode inject against restart, and the same\n" +
			"session run in-process without Temporal. See docs/benchmarks.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Concurrency, err = parseInts(concurrency); err != nil {
				return fmt.Errorf("--concurrency: %w", err)
			}
			if quick {
				given := o.Concurrency
				o = bench.Quick(o)
				if cmd.Flags().Changed("concurrency") {
					o.Concurrency = given
				}
			}
			if !inProcess {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				o.WorkerCommand = []string{exe, "worker", "--allow-private-model-hosts"} // the scripted model listens on loopback
			}
			o.Progress = cmd.ErrOrStderr()
			rep, err := bench.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printReport(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	cmd.Flags().BoolVar(&quick, "quick", false, "a reduced set (one session each, concurrency 1 and 20): under two minutes")
	cmd.Flags().DurationVar(&o.Latency, "latency", time.Second, "the scripted model's time per call")
	cmd.Flags().IntVar(&o.Sessions, "sessions", 3, "sessions per measurement (the median is reported)")
	cmd.Flags().StringVar(&concurrency, "concurrency", "1,50,200", "concurrent sessions of the throughput runs, comma-separated")
	cmd.Flags().IntVar(&o.WorkerConcurrency, "worker-concurrency", 1000, "the worker's limit of concurrent agent steps")
	cmd.Flags().DurationVar(&o.SessionTimeout, "session-timeout", 10*time.Minute, "a throughput session taking longer counts as timed out")
	cmd.Flags().BoolVar(&o.SkipInject, "skip-inject", false, "leave out the inject-vs-restart comparison")
	cmd.Flags().StringVar(&o.WorkerCPUProfile, "worker-cpuprofile", "", "have the worker of the overhead sessions write a CPU profile to this file")
	cmd.Flags().BoolVar(&inProcess, "in-process-worker", false, "run the worker inside this process (its memory is then not measured alone)")
	return cmd
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func printReport(w io.Writer, r *bench.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "machine\t%d CPUs, %s, %.1f GB, %s, %s\n", r.Machine.CPUs, r.Machine.CPU, r.Machine.MemoryGB, r.Machine.OS, r.Machine.GoVersion)
	fmt.Fprintf(tw, "model latency\t%.0f ms per call\n", r.ModelLatencyMS)
	fmt.Fprintf(tw, "overhead ratio\t%.3f\t(session %.0f ms / model time %.0f ms; target ≤ 1.10)\n", r.OverheadRatio, r.SessionWallMS, r.ModelTimeMS)
	fmt.Fprintf(tw, "step overhead\tp50 %.1f ms, p95 %.1f ms\t(%d agent steps; target p50 ≤ 50 ms)\n", r.StepOverheadMS.P50, r.StepOverheadMS.P95, r.StepOverheadMS.N)
	b := r.StepBreakdownMS
	fmt.Fprintf(tw, "  of which\tdispatch p50 %.1f ms, before the model %.1f ms, after it %.1f ms\n", b.Dispatch.P50, b.BeforeModel.P50, b.AfterModel.P50)
	fmt.Fprintf(tw, "baseline ratio\t%.3f\t(Temporal %.0f ms / in-process %.0f ms)\n", r.BaselineRatio, r.SessionWallMS, r.BaselineWallMS)
	if iv := r.InjectVsRestart; iv != nil {
		fmt.Fprintf(tw, "inject / restart\ttokens %.3f, wall %.3f\t(%d vs %d tokens; target tokens ≤ 0.60)\n", iv.TokenRatio, iv.WallRatio, iv.Inject.Tokens, iv.Restart.Tokens)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "concurrency\tsessions/min\twall s\ttimed out\tfailed\tworker peak MiB\t")
	for _, t := range r.Throughput {
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%d\t%d\t%.0f\t\n", t.Concurrency, t.SessionsPerMinute, t.WallS, t.TimedOut, t.Failed, t.PeakRSSMB)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n(%.0f s in all)\n", r.DurationS)
}

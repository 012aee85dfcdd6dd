package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/conclave-ai/conclave/worker"
)

func newWorkerCmd() *cobra.Command {
	var tf temporalFlags
	var storageURL string
	var concurrency int
	var cpuProfile string
	var ef egressFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a Temporal worker that executes Conclave sessions",
		Long: "Polls the task queue and runs Coordination workflows and agent steps.\n" +
			"Model API keys are read from this process's environment (the variables the\n" +
			"agents' configs name, if this worker allows them: see --allow-key-env); they\n" +
			"never enter workflow inputs or history.\n" +
			"SIGINT/SIGTERM stop it gracefully; unfinished steps resume on another worker.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			egress, err := ef.egress()
			if err != nil {
				return err
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			st, err := worker.OpenStorage(ctx, storageURL)
			if err != nil {
				return err
			}
			o, err := withCodec(client.Options{HostPort: tf.address, Namespace: tf.namespace,
				Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))})
			if err != nil {
				return err
			}
			c, err := client.Dial(o)
			if err != nil {
				return fmt.Errorf("connect to Temporal at %s: %w", tf.address, err)
			}
			defer c.Close()
			w := worker.New(c, worker.Options{TaskQueue: tf.taskQueue, Namespace: tf.namespace, Store: st, Concurrency: concurrency, Egress: egress})
			if err := w.Start(); err != nil {
				return fmt.Errorf("start the worker: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "conclave worker: task queue %q on %s (namespace %s), storage %s\n",
				tf.taskQueue, tf.address, tf.namespace, st.Location())
			<-ctx.Done()
			fmt.Fprintln(cmd.ErrOrStderr(), "conclave worker: stopping")
			w.Stop()
			return nil
		},
	}
	tf.add(cmd)
	ef.add(cmd, os.Getenv)
	cmd.Flags().StringVar(&storageURL, "storage", os.Getenv("CONCLAVE_STORAGE"), "session storage: directory, file:// or s3:// URL (env CONCLAVE_STORAGE; default ./.conclave)")
	cmd.Flags().IntVar(&concurrency, "concurrency", 50, "maximum concurrent agent steps")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (go tool pprof) to this file until the worker stops")
	return cmd
}

// startCPUProfile profiles this process until the returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

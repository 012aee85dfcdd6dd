package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/log"

	"github.com/conclave-ai/conclave/worker"
)

func newWorkerCmd() *cobra.Command {
	var tf temporalFlags
	var lf logFlags
	var storageURL string
	var concurrency int
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a Temporal worker that executes Conclave sessions",
		Long: "Polls the task queue and runs Coordination workflows and agent steps.\n" +
			"Model API keys are read from this process's environment (the variables the\n" +
			"agents' configs name); they never enter workflow inputs or history.\n" +
			"SIGINT/SIGTERM stop it gracefully; unfinished steps resume on another worker.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logger, err := lf.logger(cmd.ErrOrStderr())
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
			tf.logger = log.NewStructuredLogger(logger)
			c, err := tf.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			w := worker.New(c, worker.Options{TaskQueue: tf.taskQueue, Namespace: tf.namespace, Store: st, Concurrency: concurrency})
			if err := w.Start(); err != nil {
				return fmt.Errorf("start the worker: %w", err)
			}
			logger.Info("conclave worker: task queue polled", "task_queue", tf.taskQueue, "address", tf.address,
				"namespace", tf.namespace, "storage", st.Location())
			<-ctx.Done()
			logger.Info("conclave worker: stopping")
			w.Stop()
			return nil
		},
	}
	tf.add(cmd)
	lf.add(cmd, "info")
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

package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"

	"github.com/conclave-ai/conclave/telemetry"
	"github.com/conclave-ai/conclave/worker"
)

func newWorkerCmd() *cobra.Command {
	var tf temporalFlags
	var lf logFlags
	var storageURL string
	var concurrency int
	var cpuProfile, metricsListen string
	ef := egressFlags{shared: true}
	var toolf toolFlags
	var dep worker.Deployment
	var setCurrent bool
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a Temporal worker that executes Conclave sessions",
		Long: "Polls the task queue and runs Coordination workflows and agent steps.\n" +
			"Model API keys are read from this process's environment (the variables the\n" +
			"agents' configs name, if this worker allows them: see --allow-key-env); they\n" +
			"never enter workflow inputs or history.\n" +
			"SIGINT/SIGTERM stop it gracefully; unfinished steps resume on another worker.\n\n" +
			"The worker joins a Temporal worker deployment as one build (--deployment-name,\n" +
			"--build-id). Sessions are pinned to the build that started them and finish on\n" +
			"it. The first build of a deployment that never had a current version becomes\n" +
			"current by itself; a later build takes new sessions only once it is made\n" +
			"current: with --set-current, or `temporal worker deployment set-current-version`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := dep.Validate(); err != nil {
				return err
			}
			egress, err := ef.egress()
			if err != nil {
				return err
			}
			registry, err := toolf.registry(egress)
			if err != nil {
				return err
			}
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
			tel, err := telemetry.New(ctx, telemetry.Options{Service: "conclave-worker", Version: version()})
			if err != nil {
				return err
			}
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = tel.Shutdown(sctx)
			}()
			health := &telemetry.Health{}
			if metricsListen != "" {
				addr, _, err := telemetry.Serve(ctx, metricsListen, tel.Handler(health))
				if err != nil {
					return err
				}
				logger.Info("conclave worker: metrics and health", "address", addr, "paths", "/metrics /healthz /readyz")
			}
			tf.logger = log.NewStructuredLogger(logger)
			tf.configure = tel.ClientOptions
			c, err := tf.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			health.Check = func(ctx context.Context) error {
				_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
				return err
			}
			w := worker.New(c, worker.Options{TaskQueue: tf.taskQueue, Namespace: tf.namespace, Store: st, Concurrency: concurrency,
				Egress:       egress,
				Models:       tel.Models(worker.EgressModels(egress)),
				Interceptors: []interceptor.WorkerInterceptor{tel.Interceptor()}, Tools: registry, OnToolCall: tel.ToolCall,
				Deployment: dep})
			if err := w.Start(); err != nil {
				return fmt.Errorf("start the worker: %w", err)
			}
			defer w.Stop()
			pctx, cancel := context.WithTimeout(ctx, time.Minute)
			routing, err := worker.MakeCurrent(pctx, c, dep, setCurrent)
			cancel()
			if err != nil {
				return err
			}
			health.SetStarted(true)
			logger.Info("conclave worker: tools", "mcp_servers", registry.Names(), "inline_mcp_servers", registry.AllowInline, "command_sandbox", registry.Sandbox.Describe())
			logger.Info("conclave worker: task queue polled", "task_queue", tf.taskQueue, "address", tf.address,
				"namespace", tf.namespace, "storage", st.Location(), "tracing", tel.Tracing(),
				"deployment", dep.Name, "build_id", dep.BuildID, "current_build_id", routing.Current, "made_current", routing.Changed)
			if dep.BuildID == anonymousBuild {
				logger.Warn("conclave worker: this binary has no version, so its build id is \"" + anonymousBuild + "\", shared by every such build: " +
					"sessions are pinned to build ids, so build with `make build` (or the Dockerfile's --build-arg VERSION) or set --build-id")
			}
			if routing.Current != dep.BuildID {
				logger.Warn("conclave worker: this build is not current; it runs only sessions pinned to it, new sessions go to "+
					currentName(routing.Current)+". Roll it out with --set-current or "+
					"`temporal worker deployment set-current-version --deployment-name "+dep.Name+" --build-id "+dep.BuildID+"`",
					"build_id", dep.BuildID)
			}
			<-ctx.Done()
			logger.Info("conclave worker: stopping")
			health.SetStarted(false)
			return nil
		},
	}
	tf.add(cmd)
	lf.add(cmd, "info")
	ef.add(cmd, os.Getenv)
	toolf.add(cmd, false)
	cmd.Flags().StringVar(&storageURL, "storage", os.Getenv("CONCLAVE_STORAGE"), "session storage: directory, file:// or s3:// URL (env CONCLAVE_STORAGE; default ./.conclave)")
	cmd.Flags().IntVar(&concurrency, "concurrency", 50, "maximum concurrent agent steps")
	cmd.Flags().StringVar(&dep.Name, "deployment-name", envOr("CONCLAVE_DEPLOYMENT_NAME", worker.DefaultDeployment),
		"Temporal worker deployment this worker joins (env CONCLAVE_DEPLOYMENT_NAME)")
	cmd.Flags().StringVar(&dep.BuildID, "build-id", envOr("CONCLAVE_BUILD_ID", buildID()),
		"this build's id in the deployment; sessions are pinned to it (env CONCLAVE_BUILD_ID; default this binary's version)")
	cmd.Flags().BoolVar(&setCurrent, "set-current", false,
		"make this build the deployment's current version once it polls, so new sessions start on it (a rollout)")
	cmd.Flags().StringVar(&metricsListen, "metrics-listen", os.Getenv("CONCLAVE_METRICS_LISTEN"),
		"serve Prometheus /metrics and the /healthz, /readyz probes on this host:port, e.g. :9090 (env CONCLAVE_METRICS_LISTEN)")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (go tool pprof) to this file until the worker stops")
	return cmd
}

func currentName(buildID string) string {
	if buildID == "" {
		return "unversioned workers"
	}
	return "build " + buildID
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

// Package worker assembles a Temporal worker that runs Conclave's workflows
// and activities. The CLI, the dev command, the demo and the integration
// tests all build workers here, so they register exactly the same things.
package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/conclave-ai/conclave/activities"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/mcp"
	"github.com/conclave-ai/conclave/engine/step"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/workflows"
)

// DefaultTaskQueue is the task queue Conclave workers poll and sessions use.
const DefaultTaskQueue = "conclave"

// DefaultStorage is where sessions go when no storage URL is given.
const DefaultStorage = ".conclave"

// Options configure a worker.
type Options struct {
	TaskQueue string
	Namespace string
	// Store is the root of all sessions.
	Store storage.Store
	// Models builds agents' models; nil reads keys from the environment
	// within Egress (EgressModels).
	Models step.ModelFactory
	// Egress is which key variables and model hosts sessions may use; the
	// zero value allows the providers' key variables and any host.
	Egress config.Egress
	// Concurrency caps concurrent activities (agent steps); 0 is 50.
	Concurrency int
	// HeartbeatEvery overrides the agent-step heartbeat period.
	HeartbeatEvery time.Duration
	// Interceptors observe workflows and activities (metrics).
	Interceptors []interceptor.WorkerInterceptor
	// Tools is which MCP servers and commands sessions may run here; nil
	// runs none.
	Tools *mcp.Registry
	// OnToolCall observes every tool call (metrics).
	OnToolCall func(tool string, failed bool, took time.Duration)
	// Deployment, when it has a build id, opts the worker into Worker
	// Versioning: its sessions are Pinned to this build (MakeCurrent).
	Deployment Deployment
}

// New registers the workflows and activities on a new worker.
func New(c client.Client, o Options) sdkworker.Worker {
	if o.TaskQueue == "" {
		o.TaskQueue = DefaultTaskQueue
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 50
	}
	if o.Models == nil {
		o.Models = EgressModels(o.Egress)
	}
	opts := sdkworker.Options{
		MaxConcurrentActivityExecutionSize: o.Concurrency,
		// In-flight steps get this long to finish on shutdown; the rest
		// are retried elsewhere from their checkpoints.
		WorkerStopTimeout: 10 * time.Second,
		// A step beats after every model turn; sending within 5 s lets a
		// cancellation (update_mode restart) stop it within seconds of its
		// next safe point instead of up to a minute later. The SDK also
		// gives each beat this long, and cancels a step whose beat times
		// out: less would cancel steps whenever the server is slow.
		MaxHeartbeatThrottleInterval: 5 * time.Second,
		Interceptors:                 o.Interceptors,
	}
	if o.Deployment.BuildID != "" {
		opts.DeploymentOptions = o.Deployment.options()
	}
	w := sdkworker.New(c, o.TaskQueue, opts)
	workflows.Register(w)
	w.RegisterActivity(&activities.Activities{
		Store: o.Store, Models: o.Models, Client: c, Namespace: o.Namespace, HeartbeatEvery: o.HeartbeatEvery,
		Tools: o.Tools, OnToolCall: o.OnToolCall,
	})
	return w
}

// EnvModels builds models with keys from this process's environment: keys
// live only on workers, never in workflow inputs or history. It applies the
// default egress rule (EgressModels with a zero config.Egress).
func EnvModels(cfg *config.Config, agent *config.Agent) (llm.Model, error) {
	return EgressModels(config.Egress{})(cfg, agent)
}

// EgressModels builds models with keys from this process's environment,
// refusing a backend whose key variable or host e does not allow before
// any variable is read: the session's config comes from whoever started
// it, the worker decides which of its secrets leave it, and where to.
func EgressModels(e config.Egress) step.ModelFactory {
	return func(cfg *config.Config, agent *config.Agent) (llm.Model, error) {
		if err := e.Check(agent.Backend, os.Getenv); err != nil {
			return nil, fmt.Errorf("agent %s: %w", agent.ID, err)
		}
		return step.NewModel(cfg, agent, e, os.Getenv)
	}
}

// OpenStorage opens a storage URL, or the default directory when empty.
func OpenStorage(ctx context.Context, url string) (storage.Store, error) {
	if url == "" {
		abs, err := filepath.Abs(DefaultStorage)
		if err != nil {
			return nil, err
		}
		url = abs
	}
	st, err := storage.Open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open storage %s: %w", url, err)
	}
	return st, nil
}

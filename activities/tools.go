package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/mcp"
	"github.com/conclave-ai/conclave/engine/step"
	"github.com/conclave-ai/conclave/engine/tools"
)

// checkTools refuses, before anything of the session is stored, a config
// whose agents ask for MCP servers or commands this worker does not run.
func (a *Activities) checkTools(cfg *config.Config) error {
	if cfg == nil {
		return nil
	}
	if err := a.registry().Check(cfg); err != nil {
		return temporal.NewNonRetryableApplicationError("refused by this worker: "+err.Error(), contract.ErrTypeConfig, nil)
	}
	return nil
}

func (a *Activities) registry() *mcp.Registry {
	if a.Tools != nil {
		return a.Tools
	}
	return &mcp.Registry{}
}

// toolOpener opens an agent's tools under this worker's registry, each
// server's stderr in the worker's log.
func (a *Activities) toolOpener(ctx context.Context) step.ToolOpener {
	return func(ctx context.Context, ag *config.Agent, workspace string) (agent.Toolbox, func(), error) {
		r := a.registry()
		servers, err := r.Resolve(ag.ID, ag.Backend.Tools)
		if err != nil {
			return nil, nil, &mcp.RefusedError{Err: err}
		}
		o := mcp.Options{Workspace: workspace, Timeout: time.Duration(ag.Backend.ToolTimeout()) * time.Second,
			Allowed: ag.Backend.AllowedTools, Excluded: ag.Backend.ExcludeTools, Logf: warn(ctx)}
		if ag.Backend.EnableMCPCommandLine {
			o.Command = &mcp.CommandOptions{Sandbox: r.Sandbox, Allowed: ag.Backend.CommandLineAllowedCommands, Blocked: ag.Backend.CommandLineBlockedCommands}
		}
		tb, err := mcp.Open(ctx, servers, o)
		if err != nil {
			return nil, nil, err
		}
		if a.OnToolCall == nil {
			return tb, tb.Close, nil
		}
		return observed{tb, a.OnToolCall}, tb.Close, nil
	}
}

// observed tells each call's outcome and duration to a metrics hook.
type observed struct {
	agent.Toolbox
	on func(tool string, failed bool, took time.Duration)
}

func (o observed) Call(ctx context.Context, c agent.Call) tools.Result {
	start := time.Now()
	res := o.Toolbox.Call(ctx, c)
	if ctx.Err() == nil {
		o.on(c.Name, res.IsError, time.Since(start))
	}
	return res
}

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
// server's stderr in the worker's log; hb shows the calls in the step's
// heartbeat (the Web UI's pending activity).
func (a *Activities) toolOpener(ctx context.Context, hb *heartbeater) step.ToolOpener {
	return func(ctx context.Context, ag *config.Agent, workspace string) (agent.Toolbox, func(), error) {
		tb, err := a.registry().OpenFor(ctx, ag, workspace, warn(ctx))
		if err != nil {
			return nil, nil, err
		}
		return observed{Toolbox: tb, hb: hb, on: a.OnToolCall}, tb.Close, nil
	}
}

// observed shows each call in the heartbeat and tells its outcome and
// duration to the metrics hook.
type observed struct {
	agent.Toolbox
	hb *heartbeater
	on func(tool string, failed bool, took time.Duration)
}

func (o observed) Call(ctx context.Context, c agent.Call) tools.Result {
	start := time.Now()
	o.hb.tool(c.Name, true)
	res := o.Toolbox.Call(ctx, c)
	o.hb.tool(c.Name, false)
	if ctx.Err() == nil && o.on != nil {
		o.on(c.Name, res.IsError, time.Since(start))
	}
	return res
}

package step

import (
	"context"
	"fmt"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/session"
)

// ToolOpener starts an agent's tools beyond its workspace (MCP servers, the
// command tool) for one step in its workspace directory; close stops them
// and every process they started. The worker supplies it, with its own
// rule for what a session may run (engine/mcp).
type ToolOpener func(ctx context.Context, a *config.Agent, workspace string) (tb agent.Toolbox, close func(), err error)

// openTools gives the step its tools when the agent has any.
func openTools(ctx context.Context, open ToolOpener, a *config.Agent, in *round.Input, scope string) (func(), error) {
	if !a.Backend.HasTools() {
		return func() {}, nil
	}
	if open == nil {
		return nil, fmt.Errorf("%w: agent %s has tools (mcp_servers or enable_mcp_command_line), and this runner starts none", ErrBadInput, a.ID)
	}
	tb, closeTools, err := open(ctx, a, in.Workspace.Dir)
	if err != nil {
		return nil, err
	}
	in.Tools, in.CallScope = tb, scope
	return closeTools, nil
}

// toolScope names the step's launch in its calls' idempotency keys.
func toolScope(o Options, stepNo int) string {
	return fmt.Sprintf("%s/%s/%s/%s/%s", o.Store.Location(), o.Owner, o.Agent, session.StepName(stepNo), o.Tag)
}

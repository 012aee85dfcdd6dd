package agent

import (
	"context"

	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
)

// Files are the tools of a step besides the policy's own: the workspace
// tools it allows and its Toolbox (MCP servers, the command tool). The zero
// value offers none.
type Files struct {
	Workspace *tools.Workspace
	// Allow says which workspace tools the step may use; nil allows all.
	Allow func(name string) bool
	// Tools are the step's tools that act outside the engine; nil offers
	// none. The engine makes each of their calls durable (see Toolbox).
	Tools Toolbox
	// durable runs a Toolbox call through the engine's record of calls; it
	// is set for the duration of one reply.
	durable func(ctx context.Context, c llm.ToolCall) tools.Result
}

// Toolbox is a step's tools with effects outside the engine. Every call is
// at-least-once: a completed call's result is checkpointed before the next
// one starts and is never repeated, and a call in flight when the worker
// died runs once more, with the same Key.
type Toolbox interface {
	Specs() []tools.Spec
	Has(name string) bool
	// Call runs one call. Failures the model can react to (a tool error,
	// a crashed server, a timeout) are error results; ctx ends it.
	Call(ctx context.Context, c Call) tools.Result
}

// Call is one call of a Toolbox tool. Key is its idempotency key: the same
// for a call that runs again after a crash, different for every other call.
type Call struct {
	Name      string
	Arguments string
	Key       string
}

// Specs are the allowed workspace tools, in the workspace's order, then
// the Toolbox's.
func (f Files) Specs() []tools.Spec {
	var out []tools.Spec
	if f.Workspace != nil {
		for _, s := range f.Workspace.Specs() {
			if f.allows(s.Name) {
				out = append(out, s)
			}
		}
	}
	if f.Tools != nil {
		out = append(out, f.Tools.Specs()...)
	}
	return out
}

// Call runs c when it is an allowed workspace tool or a Toolbox tool; ok is
// false otherwise, and the policy answers the call itself.
func (f Files) Call(ctx context.Context, c llm.ToolCall) (res tools.Result, ok bool) {
	if f.Workspace != nil && f.allows(c.Name) {
		if res, ok := f.Workspace.Call(c.Name, c.Arguments); ok {
			return res, true
		}
	}
	if f.Tools == nil || !f.Tools.Has(c.Name) {
		return tools.Result{}, false
	}
	if err := tools.CheckOmitted(c.Name, c.Arguments); err != nil {
		return tools.Result{Content: err.Error(), IsError: true}, true
	}
	if f.durable != nil {
		return f.durable(ctx, c), true
	}
	return f.Tools.Call(ctx, Call{Name: c.Name, Arguments: c.Arguments}), true
}

func (f Files) allows(name string) bool {
	return f.Allow == nil || f.Allow(name)
}

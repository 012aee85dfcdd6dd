package agent

import (
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
)

// Files are the workspace tools of a step: the workspace they work in and
// the tools the step allows. The zero value offers none.
type Files struct {
	Workspace *tools.Workspace
	// Allow says which workspace tools the step may use; nil allows all.
	Allow func(name string) bool
}

// Specs are the allowed workspace tools, in the workspace's order.
func (f Files) Specs() []tools.Spec {
	if f.Workspace == nil {
		return nil
	}
	var out []tools.Spec
	for _, s := range f.Workspace.Specs() {
		if f.allows(s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// Call runs c when it is an allowed workspace tool; ok is false otherwise,
// and the policy answers the call itself.
func (f Files) Call(c llm.ToolCall) (res tools.Result, ok bool) {
	if f.Workspace == nil || !f.allows(c.Name) {
		return tools.Result{}, false
	}
	return f.Workspace.Call(c.Name, c.Arguments)
}

func (f Files) allows(name string) bool {
	return f.Allow == nil || f.Allow(name)
}

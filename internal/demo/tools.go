package demo

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

// toolResult is what the demo agent learned from a tool, for its answer.
type toolResult struct {
	tool, text string
}

// mcpPrefix starts the names of MCP tools as the model sees them.
const mcpPrefix = "mcp__"

// placeRe finds a capitalised word the demo uses as the place (or topic)
// of a tool call: "What is the weather in Lyon?" → Lyon.
var placeRe = regexp.MustCompile(`\b(?:in|for|at|about) ([A-Z][\p{L}-]+)`)

// toolReply calls the first MCP tool offered, once per step, when the agent
// has not called one yet; it fills the tool's required string arguments
// from the task. A step that already has a result answers with it.
func toolReply(r llmtest.Request, task string) (llmtest.Reply, *toolResult) {
	called := map[string]string{} // call id → tool
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			called[c.ID] = c.Name
		}
		if name := called[m.ToolCallID]; m.Role == "tool" && strings.HasPrefix(name, mcpPrefix) {
			return llmtest.Reply{}, &toolResult{tool: name, text: m.Content}
		}
	}
	for _, t := range r.Tools {
		if !strings.HasPrefix(t.Name, mcpPrefix) {
			continue
		}
		return callArgs(t.Name, toolArguments(t, task)), nil
	}
	return llmtest.Reply{}, nil
}

// toolArguments fills a tool's required string properties.
func toolArguments(t llmtest.Tool, task string) map[string]any {
	var schema struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(t.Parameters, &schema)
	place := "Paris"
	if m := placeRe.FindStringSubmatch(task); m != nil {
		place = m[1]
	}
	args := map[string]any{}
	for name, p := range schema.Properties {
		if p.Type == "string" && (slices.Contains(schema.Required, name) || len(schema.Properties) == 1) {
			args[name] = place
		}
	}
	return args
}

func callArgs(name string, args map[string]any) llmtest.Reply {
	data, _ := json.Marshal(args)
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_demo_tool", Name: name, Arguments: string(data)}}}
}

// withToolResult is the demo's answer built on a tool's result.
func withToolResult(style, task string, res *toolResult) string {
	text := strings.TrimSpace(strings.TrimPrefix(res.text, "Error: "))
	if i := strings.Index(text, "\n"); i > 0 && len(text) > 400 {
		text = text[:i]
	}
	return fmt.Sprintf("%s: %s — according to %s: %s (offline demo model)", style, task, res.tool, text)
}

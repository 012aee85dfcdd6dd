// Package chat holds the plain values of a chat conversation: messages and
// the tool calls in them. They are stored verbatim (a step's transcript, a
// pipeline call's saved messages) and carried in workflow history (a
// pipeline step's resume messages), so workflow code needs them without the
// model client of package llm, which links openai-go. Package llm refers to
// these types by alias.
package chat

// Message roles, as the chat-completions API spells them.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message. An assistant message may carry tool calls; a
// tool message answers one of them through ToolCallID.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// ToolCall is a function call requested by the model. Arguments is the raw
// JSON text the model produced; it may be invalid and is validated by the
// tool, so that the model can be told what was wrong.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Package llm is the engine's view of a chat model: a Model interface small
// enough to fake, an OpenAI-compatible implementation on openai-go, error
// classification that tells Temporal what to retry, and usage with cost.
//
// The types here are plain JSON-serializable values because they are stored
// verbatim in a step's trace.jsonl, which is also the checkpoint a retried
// activity resumes from.
package llm

import (
	"context"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm/chat"
)

// Message roles, as the chat-completions API spells them (see package chat).
const (
	RoleSystem    = chat.RoleSystem
	RoleDeveloper = chat.RoleDeveloper
	RoleUser      = chat.RoleUser
	RoleAssistant = chat.RoleAssistant
	RoleTool      = chat.RoleTool
)

// Message is one chat message. It is defined in package chat, which has no
// SDK dependency, so workflow code can carry messages too.
type Message = chat.Message

// ToolCall is a function call requested by the model (see chat.ToolCall).
type ToolCall = chat.ToolCall

// Tool is a function the model may call; Parameters is a JSON Schema object.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

// Request is one model call. An empty Model uses the implementation's default.
type Request struct {
	Model       string    `json:"model,omitempty"`
	Messages    []Message `json:"messages"`
	Tools       []Tool    `json:"tools,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	MaxTokens   *int64    `json:"max_tokens,omitempty"`
	// OnChunk, when set, is called for every streamed chunk so that a long
	// generation can heartbeat its activity. It belongs to the call, not the
	// model, because one Model may serve many activities at once.
	OnChunk func() `json:"-"`
}

// Response is the assistant's message with what it cost. FinishReason is the
// server's ("stop", "tool_calls", "length", …).
type Response struct {
	Message      Message     `json:"message"`
	Usage        coord.Usage `json:"usage"`
	FinishReason string      `json:"finish_reason"`
	// Model is the model the server says answered, which may be more
	// specific than the one requested.
	Model string `json:"model,omitempty"`
}

// Model completes a conversation. Implementations return *Error for failures
// a caller may act on (see IsRetryable) and the context's error when the
// context ends.
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

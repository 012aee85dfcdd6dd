package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Request is one decoded chat-completions call, as the server saw it.
// Tests assert on these instead of on the client's internals, so what is
// recorded is what went over the wire.
type Request struct {
	// N is the 1-based arrival number of the request on this server.
	N            int
	Model        string
	Messages     []Message
	Tools        []Tool
	Stream       bool
	IncludeUsage bool
	Temperature  *float64
	// MaxTokens is max_completion_tokens, or max_tokens when only that was sent.
	MaxTokens *int64
	Header    http.Header
	// Body is the raw JSON body, for assertions on exact wire details.
	Body []byte
}

// Message is one chat message; array content is flattened to its text parts.
type Message struct {
	Role       string
	Content    string
	Name       string
	ToolCallID string
	ToolCalls  []ToolCall
}

// ToolCall is a function call. In a recorded request Type is what the client
// sent; in a Reply it is ignored (the server writes "function" unless
// Reply.OmitType is set).
type ToolCall struct {
	ID        string
	Type      string
	Name      string
	Arguments string
}

// Tool is a function tool offered by the client.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Last returns the last message, or a zero Message when there is none.
func (r Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// HasTool reports whether a tool with this name was offered.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Contains reports whether any message's content or tool-call arguments contain s.
func (r Request) Contains(s string) bool {
	for _, m := range r.Messages {
		if m.contains(s) {
			return true
		}
	}
	return false
}

func (m Message) contains(s string) bool {
	if strings.Contains(m.Content, s) {
		return true
	}
	for _, c := range m.ToolCalls {
		if strings.Contains(c.Arguments, s) {
			return true
		}
	}
	return false
}

// PromptTokens is the deterministic prompt-token estimate the server reports:
// the characters of all message contents, names and tool-call arguments, /4
// rounded up. Tool definitions are not counted.
func (r Request) PromptTokens() int64 {
	chars := 0
	for _, m := range r.Messages {
		chars += utf8.RuneCountInString(m.Content)
		for _, c := range m.ToolCalls {
			chars += utf8.RuneCountInString(c.Name) + utf8.RuneCountInString(c.Arguments)
		}
	}
	return tokens(chars)
}

// CompletionTokens is the completion-token estimate for a reply: the
// characters of its text and tool-call names and arguments, /4 rounded up.
func (r Reply) CompletionTokens() int64 {
	chars := utf8.RuneCountInString(r.Text)
	for _, c := range r.ToolCalls {
		chars += utf8.RuneCountInString(c.Name) + utf8.RuneCountInString(c.Arguments)
	}
	return tokens(chars)
}

func tokens(chars int) int64 { return int64((chars + 3) / 4) }

// describe renders a request for the no-match error, short enough for a test log.
func (r Request) describe() string {
	last := r.Last()
	content := last.Content
	if content == "" && len(last.ToolCalls) > 0 {
		content = fmt.Sprintf("<%d tool calls, first %s(%s)>", len(last.ToolCalls), last.ToolCalls[0].Name, last.ToolCalls[0].Arguments)
	}
	const limit = 300
	if utf8.RuneCountInString(content) > limit {
		content = string([]rune(content)[:limit]) + "…"
	}
	tools := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		tools[i] = t.Name
	}
	return fmt.Sprintf("last message (%s): %q; model %q; %d messages; tools [%s]",
		last.Role, content, r.Model, len(r.Messages), strings.Join(tools, " "))
}

// wireRequest is the subset of the chat-completions request body the server understands.
type wireRequest struct {
	Model         string        `json:"model"`
	Messages      []wireMessage `json:"messages"`
	Tools         []wireTool    `json:"tools"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature         *float64 `json:"temperature"`
	MaxTokens           *int64   `json:"max_tokens"`
	MaxCompletionTokens *int64   `json:"max_completion_tokens"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// wireToolCall serves both directions: decoding requests, and encoding
// replies and stream deltas (hence the pointers and omitempty).
type wireToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

func decodeRequest(body []byte) (Request, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, fmt.Errorf("decode chat-completions body: %w", err)
	}
	req := Request{
		Model:       w.Model,
		Stream:      w.Stream,
		Temperature: w.Temperature,
		MaxTokens:   w.MaxCompletionTokens,
		Body:        body,
	}
	if req.MaxTokens == nil {
		req.MaxTokens = w.MaxTokens
	}
	if w.StreamOptions != nil {
		req.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	for _, m := range w.Messages {
		content, err := decodeContent(m.Content)
		if err != nil {
			return Request{}, fmt.Errorf("message %d: %w", len(req.Messages), err)
		}
		msg := Message{Role: m.Role, Content: content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{
				ID: c.ID, Type: c.Type, Name: c.Function.Name, Arguments: c.Function.Arguments,
			})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, Tool{
			Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters,
		})
	}
	return req, nil
}

// decodeContent accepts the string form, the array-of-parts form and null.
func decodeContent(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content is neither a string nor an array of parts: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

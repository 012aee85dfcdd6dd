package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// created is a fixed timestamp so that replies are byte-for-byte deterministic.
const created = 1700000000

type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

type wireCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage,omitempty"`
}

type wireChoice struct {
	Index        int           `json:"index"`
	Message      *wireReplyMsg `json:"message,omitempty"`
	Delta        *wireReplyMsg `json:"delta,omitempty"`
	FinishReason *string       `json:"finish_reason"`
}

type wireReplyMsg struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func usageOf(req Request, reply Reply) *wireUsage {
	p, c := req.PromptTokens(), reply.CompletionTokens()
	return &wireUsage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

func finishReason(reply Reply) *string {
	reason := reply.FinishReason
	if reason == "" {
		reason = "stop"
		if len(reply.ToolCalls) > 0 {
			reason = "tool_calls"
		}
	}
	return &reason
}

// toolCalls renders reply tool calls, generating deterministic ids where the
// script left them out.
func toolCalls(req Request, reply Reply) []wireToolCall {
	out := make([]wireToolCall, len(reply.ToolCalls))
	for i, c := range reply.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", req.N, i)
		}
		typ := "function"
		if reply.OmitType {
			typ = ""
		}
		out[i] = wireToolCall{ID: id, Type: typ, Function: wireFunction{Name: c.Name, Arguments: c.Arguments}}
	}
	return out
}

func completionID(req Request) string { return "chatcmpl-llmtest-" + strconv.Itoa(req.N) }

func writeCompletion(w http.ResponseWriter, req Request, reply Reply) {
	msg := &wireReplyMsg{Role: "assistant", ToolCalls: toolCalls(req, reply)}
	if reply.Text != "" || len(reply.ToolCalls) == 0 {
		msg.Content = &reply.Text
	}
	body, _ := json.Marshal(wireCompletion{
		ID: completionID(req), Object: "chat.completion", Created: created, Model: req.Model,
		Choices: []wireChoice{{Message: msg, FinishReason: finishReason(reply)}},
		Usage:   usageOf(req, reply),
	})
	w.Header().Set("Content-Type", "application/json")
	if reply.DropAfterChunks > 0 {
		// Promise the whole body, deliver half: the client sees an unexpected EOF.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body[:len(body)/2])
		_ = http.NewResponseController(w).Flush()
		abort()
	}
	_, _ = w.Write(body)
}

// streamWriter writes SSE chunks and counts them for DropAfterChunks.
type streamWriter struct {
	ctx     context.Context
	every   time.Duration
	w       http.ResponseWriter
	rc      *http.ResponseController
	base    wireCompletion
	written int
	dropAt  int
}

func (sw *streamWriter) send(v any) {
	if sw.every > 0 && !wait(sw.ctx, sw.every) {
		abort()
	}
	data, _ := json.Marshal(v)
	_, _ = fmt.Fprintf(sw.w, "data: %s\n\n", data)
	_ = sw.rc.Flush()
	sw.written++
	if sw.dropAt > 0 && sw.written >= sw.dropAt {
		abort()
	}
}

func (sw *streamWriter) delta(d wireReplyMsg, finish *string) {
	c := sw.base
	c.Choices = []wireChoice{{Delta: &d, FinishReason: finish}}
	sw.send(c)
}

// writeStream mimics OpenAI's chunk sequence: a role chunk, text pieces, for
// each tool call a header chunk (index, id, type, name) followed by argument
// fragments, a finish chunk, an optional usage chunk, then [DONE].
func (s *Server) writeStream(ctx context.Context, w http.ResponseWriter, req Request, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	size := s.ChunkRunes
	if size <= 0 {
		size = 16
	}
	sw := &streamWriter{
		ctx: ctx, every: reply.Every,
		w: w, rc: http.NewResponseController(w), dropAt: reply.DropAfterChunks,
		base: wireCompletion{ID: completionID(req), Object: "chat.completion.chunk", Created: created, Model: req.Model},
	}
	empty := ""
	sw.delta(wireReplyMsg{Role: "assistant", Content: &empty}, nil)
	for _, piece := range split(reply.Text, size) {
		sw.delta(wireReplyMsg{Content: &piece}, nil)
	}
	if reply.Endless && len(reply.ToolCalls) == 0 {
		sw.forever(func() { sw.delta(wireReplyMsg{Content: &reply.Text}, nil) })
	}
	calls := toolCalls(req, reply)
	for i, call := range calls {
		index := i
		head := wireToolCall{Index: &index, ID: call.ID, Type: call.Type, Function: wireFunction{Name: call.Function.Name}}
		sw.delta(wireReplyMsg{ToolCalls: []wireToolCall{head}}, nil)
		for _, frag := range split(call.Function.Arguments, size) {
			sw.delta(wireReplyMsg{ToolCalls: []wireToolCall{{Index: &index, Function: wireFunction{Arguments: frag}}}}, nil)
		}
		if reply.Endless && i == len(calls)-1 {
			args := call.Function.Arguments
			sw.forever(func() {
				sw.delta(wireReplyMsg{ToolCalls: []wireToolCall{{Index: &index, Function: wireFunction{Arguments: args}}}}, nil)
			})
		}
	}
	sw.delta(wireReplyMsg{}, finishReason(reply))
	if req.IncludeUsage {
		c := sw.base
		c.Choices = []wireChoice{}
		c.Usage = usageOf(req, reply)
		sw.send(c)
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	_ = sw.rc.Flush()
}

// forever repeats send until the client goes away, then aborts the
// connection (an endless reply has no end to write).
func (sw *streamWriter) forever(send func()) {
	for sw.ctx.Err() == nil {
		send()
	}
	abort()
}

// writeBody answers with a body that is not a completion, with the
// reply's status (default 200).
func writeBody(w http.ResponseWriter, reply Reply) {
	ct := reply.ContentType
	if ct == "" {
		ct = "text/plain"
	}
	w.Header().Set("Content-Type", ct)
	if reply.Status != 0 {
		w.WriteHeader(reply.Status)
	}
	_, _ = io.WriteString(w, reply.Body)
}

// split cuts s into pieces of at most n runes.
func split(s string, n int) []string {
	var out []string
	runes := 0
	start := 0
	for i := range s {
		if runes == n {
			out = append(out, s[start:i])
			start, runes = i, 0
		}
		runes++
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// writeError answers with an OpenAI-style error body; type and code default
// to what OpenAI sends for the status.
func writeError(w http.ResponseWriter, reply Reply) {
	var e wireError
	e.Error.Message = reply.Error
	if e.Error.Message == "" {
		e.Error.Message = http.StatusText(reply.Status)
	}
	typ, code := reply.ErrorType, reply.ErrorCode
	if typ == "" || code == "" {
		dt, dc := defaultErrorKind(reply.Status)
		if typ == "" {
			typ = dt
		}
		if code == "" {
			code = dc
		}
	}
	e.Error.Type = typ
	if code != "" {
		e.Error.Code = &code
	}
	body, _ := json.Marshal(e)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(reply.Status)
	_, _ = w.Write(body)
}

func defaultErrorKind(status int) (typ, code string) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusForbidden:
		return "permission_error", ""
	case status == http.StatusNotFound:
		return "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", ""
	default:
		return "invalid_request_error", ""
	}
}

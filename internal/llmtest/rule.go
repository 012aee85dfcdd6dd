package llmtest

import (
	"net/http"
	"strings"
	"time"
)

// Reply is what the server answers to a matched request. A Status >= 400
// makes it an error reply; Drop closes the connection without answering.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// OmitType leaves "type" out of tool calls, as some OpenAI-compatible
	// servers do.
	OmitType bool
	// FinishReason defaults to "tool_calls" when there are tool calls, else "stop".
	FinishReason string

	// Status >= 400 answers with an OpenAI-style error body instead.
	Status int
	// Error is the error message; ErrorType and ErrorCode default from Status.
	Error     string
	ErrorType string
	ErrorCode string

	// Header holds extra response headers (Retry-After, retry-after-ms…).
	Header http.Header
	// Delay waits before answering; a cancelled request stops the wait.
	Delay time.Duration
	// Drop hijacks the connection and closes it without writing anything.
	Drop bool
	// DropAfterChunks aborts the connection after this many stream chunks
	// (for a non-streaming call: after half the body), to simulate a
	// connection lost mid-answer.
	DropAfterChunks int

	// Endless keeps streaming after the reply's text, never finishing: the
	// text again and again as content, or, with ToolCalls, the last call's
	// arguments again and again, until the client goes away. It plays a
	// model that never stops (or a hostile server).
	Endless bool
	// Every pauses between streamed chunks (a slow, trickling reply).
	Every time.Duration
	// Body is sent as it is, with Status (default 200) and ContentType
	// (default text/plain), instead of a completion or an OpenAI error: a
	// server that is not a model.
	Body        string
	ContentType string
}

// Rule matches requests and says how to answer them. Rules are built from a
// reply constructor (Text, Call, Calls, Fail, Drop, Respond, Func) and refined
// with If… matchers and modifiers; every method returns a modified copy, so
// a base rule can be shared.
type Rule struct {
	name         string
	model        string
	tool         string
	contains     string
	lastContains string
	preds        []func(Request) bool
	times        int
	reply        Reply
	fn           func(Request) Reply
}

// Text answers with assistant text.
func Text(s string) Rule { return Rule{reply: Reply{Text: s}} }

// Call answers with one tool call; its id is generated when empty.
func Call(name, arguments string) Rule {
	return Rule{reply: Reply{ToolCalls: []ToolCall{{Name: name, Arguments: arguments}}}}
}

// Calls answers with several tool calls at once.
func Calls(calls ...ToolCall) Rule { return Rule{reply: Reply{ToolCalls: calls}} }

// Fail answers with an HTTP error status and an OpenAI-style error body.
func Fail(status int, message string) Rule {
	return Rule{reply: Reply{Status: status, Error: message}}
}

// Drop closes the connection without answering.
func Drop() Rule { return Rule{reply: Reply{Drop: true}} }

// Respond answers with a fully specified Reply.
func Respond(r Reply) Rule { return Rule{reply: r} }

// Func computes the reply from the request, for scripted "models" that must
// react to what they are asked (the offline demo).
func Func(fn func(Request) Reply) Rule { return Rule{fn: fn} }

// Named labels the rule; the label is not used for matching but makes a
// failing script easier to read.
func (r Rule) Named(name string) Rule { r.name = name; return r }

// IfModel matches requests for this model.
func (r Rule) IfModel(model string) Rule { r.model = model; return r }

// IfTool matches requests that offer a tool with this name.
func (r Rule) IfTool(name string) Rule { r.tool = name; return r }

// IfContains matches requests where any message contains s.
func (r Rule) IfContains(s string) Rule { r.contains = s; return r }

// IfLastContains matches requests whose last message contains s.
func (r Rule) IfLastContains(s string) Rule { r.lastContains = s; return r }

// If matches requests for which pred holds; several If calls must all hold.
func (r Rule) If(pred func(Request) bool) Rule {
	r.preds = append(r.preds[:len(r.preds):len(r.preds)], pred)
	return r
}

// IfN matches on the request's arrival number (1-based, across the server).
func (r Rule) IfN(pred func(n int) bool) Rule {
	return r.If(func(req Request) bool { return pred(req.N) })
}

// Times limits the rule to n uses; after that, requests fall through to later
// rules. Zero means unlimited.
func (r Rule) Times(n int) Rule { r.times = n; return r }

// Once is Times(1).
func (r Rule) Once() Rule { return r.Times(1) }

// After delays the answer by d.
func (r Rule) After(d time.Duration) Rule { r.reply.Delay = d; return r }

// RetryAfter sets the Retry-After header to v (seconds or an HTTP date).
func (r Rule) RetryAfter(v string) Rule { return r.WithHeader("Retry-After", v) }

// WithHeader adds a response header.
func (r Rule) WithHeader(key, value string) Rule {
	h := r.reply.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	r.reply.Header = h
	return r
}

// WithCode sets the error code of an error reply (e.g. "context_length_exceeded").
func (r Rule) WithCode(code string) Rule { r.reply.ErrorCode = code; return r }

// WithoutType omits "type" from tool calls.
func (r Rule) WithoutType() Rule { r.reply.OmitType = true; return r }

// DropAfter aborts the connection after n stream chunks.
func (r Rule) DropAfter(n int) Rule { r.reply.DropAfterChunks = n; return r }

// Forever makes the reply Endless.
func (r Rule) Forever() Rule { r.reply.Endless = true; return r }

// Trickle pauses d between streamed chunks.
func (r Rule) Trickle(d time.Duration) Rule { r.reply.Every = d; return r }

func (r Rule) matches(req Request) bool {
	if r.model != "" && req.Model != r.model {
		return false
	}
	if r.tool != "" && !req.HasTool(r.tool) {
		return false
	}
	if r.contains != "" && !req.Contains(r.contains) {
		return false
	}
	if r.lastContains != "" && !req.Last().contains(r.lastContains) {
		return false
	}
	for _, p := range r.preds {
		if !p(req) {
			return false
		}
	}
	return true
}

func (r Rule) replyTo(req Request) Reply {
	if r.fn == nil {
		return r.reply
	}
	reply := r.fn(req)
	// Modifiers chained on a Func rule still apply where the function left a gap.
	if reply.Delay == 0 {
		reply.Delay = r.reply.Delay
	}
	if reply.Header == nil {
		reply.Header = r.reply.Header
	}
	reply.OmitType = reply.OmitType || r.reply.OmitType
	return reply
}

// String describes the rule's matchers, for debugging scripts.
func (r Rule) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("name", r.name)
	add("model", r.model)
	add("tool", r.tool)
	add("contains", r.contains)
	add("last", r.lastContains)
	if len(r.preds) > 0 {
		parts = append(parts, "if=…")
	}
	if len(parts) == 0 {
		return "rule(any)"
	}
	return "rule(" + strings.Join(parts, " ") + ")"
}

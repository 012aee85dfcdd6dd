package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/runes"
)

// apiError is an error in OpenAI's shape: {"error": {message, type, param, code}}.
type apiError struct {
	status int
	typ    string
	code   string
	param  string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, msg: fmt.Sprintf(format, args...)}
}

func notFound(id string) *apiError {
	return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "not_found", param: "id",
		msg: fmt.Sprintf("no response %q for this API key", echo(id))}
}

// maxEcho bounds a value of the request quoted back in an error message,
// and maxUnknownFields the unknown fields named: an error never grows with
// what the client sent.
const (
	maxEcho          = 64
	maxUnknownFields = 5
)

// echo is a value of the request as an error message quotes it.
func echo(s string) string { return runes.Clip(s, maxEcho) }

func serverError(msg string) *apiError {
	return &apiError{status: http.StatusInternalServerError, typ: "server_error", msg: msg}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = serverError(err.Error())
	}
	if e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	writeJSON(w, e.status, errorBody(e))
}

// errorBody is OpenAI's error object, also sent as an event when a stream
// cannot go on.
func errorBody(e *apiError) map[string]any {
	body := map[string]any{"message": e.msg, "type": e.typ, "param": nil, "code": nil}
	if e.param != "" {
		body["param"] = e.param
	}
	if e.code != "" {
		body["code"] = e.code
	}
	return map[string]any{"error": body}
}

// readBody reads the whole body (read and bounded by authed) and splits it into its
// top-level fields. A field the endpoint does not know is refused by name:
// the team's settings (storage, secrets, tools, MCP servers…) are the
// operator's, never the request's.
func readBody(w http.ResponseWriter, r *http.Request, known, ignored []string) (map[string]json.RawMessage, error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, badRequest("", "read the request body: %v", err)
	}
	var fields map[string]json.RawMessage
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]json.RawMessage{}, nil
	}
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return nil, badRequest("", "the request body is not a JSON object")
	}
	var unknown []string
	for k := range fields {
		if !slices.Contains(known, k) && !slices.Contains(ignored, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		named := make([]string, 0, maxUnknownFields+1)
		for _, k := range unknown[:min(len(unknown), maxUnknownFields)] {
			named = append(named, echo(k))
		}
		if more := len(unknown) - len(named); more > 0 {
			named = append(named, fmt.Sprintf("and %d more", more))
		}
		return nil, badRequest(echo(unknown[0]), "%s cannot be set by a request: the team's settings (models, tools, storage, secrets) come from the operator's config; accepted fields are %s",
			strings.Join(named, ", "), strings.Join(known, ", "))
	}
	if bytes.Equal(bytes.TrimSpace(fields["store"]), []byte("false")) {
		return nil, badRequest("store", "store cannot be false: every run is a durable session, stored as the operator configured; leave store out")
	}
	return fields, nil
}

// field decodes one optional field; absent or null leaves v as it is.
func field(fields map[string]json.RawMessage, name string, v any) error {
	raw, ok := fields[name]
	if !ok || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return badRequest(name, "%s has the wrong type: %v", name, err)
	}
	return nil
}

// message is one turn of the conversation, as the run's memo keeps it.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

var roles = []string{"system", "developer", "user", "assistant"}

// parseMessages reads OpenAI messages (chat) or input items (responses):
// a role and a content that is a string or a list of text parts.
func parseMessages(raw json.RawMessage, param string, max int) ([]message, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest(param, "%s must be a list of messages", param)
	}
	if len(items) == 0 {
		return nil, badRequest(param, "%s is empty: send at least one user message", param)
	}
	if len(items) > max {
		return nil, badRequest(param, "%s has %d messages, over this server's limit of %d; send a shorter conversation or continue it with previous_response_id", param, len(items), max)
	}
	out := make([]message, 0, len(items))
	for i, item := range items {
		at := fmt.Sprintf("%s[%d]", param, i)
		var m struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Name    string          `json:"name"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(item, &m); err != nil {
			return nil, badRequest(at, "%s is not a message object", at)
		}
		var extra map[string]json.RawMessage
		_ = json.Unmarshal(item, &extra)
		for k := range extra {
			if k != "type" && k != "role" && k != "name" && k != "content" {
				return nil, badRequest(at, "%s.%s is not supported: messages carry a role and text content only (the team does not call the client's tools)", at, echo(k))
			}
		}
		if m.Type != "" && m.Type != "message" {
			return nil, badRequest(at, "%s has type %q; only messages are accepted", at, echo(m.Type))
		}
		if !slices.Contains(roles, m.Role) {
			return nil, badRequest(at, "%s.role %q is not one of %s", at, echo(m.Role), strings.Join(roles, ", "))
		}
		text, err := contentText(m.Content, at)
		if err != nil {
			return nil, err
		}
		out = append(out, message{Role: m.Role, Content: text})
	}
	if last := out[len(out)-1]; last.Role != "user" || strings.TrimSpace(last.Content) == "" {
		return nil, badRequest(param, "the last message must be a non-empty user message: it is the task")
	}
	return out, nil
}

func contentText(raw json.RawMessage, at string) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(at+".content", "%s.content must be a string or a list of text parts", at)
	}
	var b strings.Builder
	for j, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			b.WriteString(p.Text)
		default:
			return "", badRequest(fmt.Sprintf("%s.content[%d]", at, j), "%s.content[%d] has type %q; only text is accepted", at, j, echo(p.Type))
		}
	}
	return b.String(), nil
}

// task is what the agents are asked: the last user message, after the
// earlier turns given as context (a follow-up turn).
func task(conv []message) (string, error) {
	last := conv[len(conv)-1].Content
	var b strings.Builder
	if len(conv) > 1 {
		b.WriteString("This is a follow-up turn. The conversation so far, for context:\n\n<CONVERSATION>\n")
		for _, m := range conv[:len(conv)-1] {
			fmt.Fprintf(&b, "[%s]\n%s\n\n", m.Role, m.Content)
		}
		b.WriteString("<END OF CONVERSATION>\n\nThe current request:\n\n")
	}
	b.WriteString(last)
	if b.Len() > contract.MaxTaskBytes {
		return "", &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
			msg: fmt.Sprintf("the conversation is %d bytes as a task, over the limit of %d; start a new conversation", b.Len(), contract.MaxTaskBytes)}
	}
	return b.String(), nil
}

// maxTokensLimit bounds a request's max_tokens: it can only lower the
// operator's per-agent setting.
const maxTokensLimit = 1 << 20

// withMaxTokens lowers every agent's max_tokens to *limit (nil: unchanged).
func withMaxTokens(cfg config.Config, limit *int, param string) (config.Config, error) {
	if limit == nil {
		return cfg, nil
	}
	n := *limit
	if n < 1 || n > maxTokensLimit {
		return cfg, badRequest(param, "%s must be between 1 and %d", param, maxTokensLimit)
	}
	agents := slices.Clone(cfg.Agents)
	for i := range agents {
		if m := agents[i].Backend.MaxTokens; m == nil || *m > n {
			v := n
			agents[i].Backend.MaxTokens = &v
		}
	}
	cfg.Agents = agents
	return cfg, nil
}

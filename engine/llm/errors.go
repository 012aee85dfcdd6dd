package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/conclave-ai/conclave/engine/runes"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// Error is a failed model call, classified. The client's own retries are
// off, so Retryable and RetryAfter are what Temporal's retry policy (or a
// caller's loop) acts on. Cause is the message for a person: what went wrong
// and what to do; it never contains the API key.
type Error struct {
	// Status is the HTTP status, 0 for network and stream failures.
	Status     int
	Retryable  bool
	RetryAfter time.Duration
	Cause      string
	Err        error
}

func (e *Error) Error() string { return e.Cause }

func (e *Error) Unwrap() error { return e.Err }

// ErrProtocol marks a reply that is not an OpenAI-compatible event stream
// although its status is 200: a web page, a login form, a plain JSON
// object. It is not retryable: such a reply comes from a base_url that is
// not the API root (a wrong path, a proxy's sign-in page, another service),
// which answers the same way every time, so retrying would only hide the
// misconfiguration for the whole retry budget. A stream that is merely cut
// (an empty body, or events without a finish) stays retryable.
var ErrProtocol = errors.New("the model server's reply is not an OpenAI-compatible event stream")

// IsRetryable reports whether err is a model failure worth retrying later.
// Context errors and unclassified errors are not.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

// RetryAfter is the server's requested wait before retrying, or 0.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// classify turns what the client returned into *Error. res is the HTTP
// response when one arrived: the SDK drops the status when an error body is
// not OpenAI-shaped JSON (a proxy's HTML 502), so it is read from there.
func (m *OpenAI) classify(ctx context.Context, err error, res *http.Response, model string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, ErrHostRefused) {
		return &Error{Err: err, Cause: fmt.Sprintf("calling model %q: %s", model, refusal(err))}
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		var header http.Header
		if apiErr.Response != nil {
			header = apiErr.Response.Header
		}
		return m.statusError(apiErr.StatusCode, apiErr.Code, apiErr.Message, header, model, err)
	}
	if res != nil && res.StatusCode >= 400 {
		return m.statusError(res.StatusCode, "", http.StatusText(res.StatusCode), res.Header, model, err)
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		return m.streamError(streamErr, model)
	}
	if isNetwork(err) {
		return &Error{Retryable: true, Err: err,
			Cause: fmt.Sprintf("network error talking to %s: %s", m.baseURL, m.redact(err.Error()))}
	}
	return &Error{Err: err, Cause: fmt.Sprintf("calling model %q at %s: %s", model, m.baseURL, m.redact(err.Error()))}
}

// refusal is the Guard's own message, without the transport's wrapping
// (Post "…": dial tcp …:).
func refusal(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ErrHostRefused.Error()); i >= 0 {
		return msg[i:]
	}
	return msg
}

// statusError names the cause of an HTTP error status. 408, 409, 429 and 5xx
// are transient; every other status will fail the same way again.
func (m *OpenAI) statusError(status int, code, message string, header http.Header, model string, err error) *Error {
	msg := cutMessage(m.redact(message), maxMessage)
	e := &Error{Status: status, Err: err}
	switch {
	case status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500:
		e.Retryable = true
		e.RetryAfter = parseRetryAfter(header, time.Now())
		kind := "server error"
		switch status {
		case http.StatusTooManyRequests:
			kind = "rate limited"
		case http.StatusRequestTimeout:
			kind = "request timed out"
		case http.StatusConflict:
			kind = "conflict"
		}
		e.Cause = fmt.Sprintf("%s (%d) from %s: %s", kind, status, m.baseURL, msg)
		switch {
		case e.RetryAfter > m.limits.RetryAfter:
			// Waiting would hold the whole session up: the call fails
			// for good and the session goes on without this agent.
			e.Cause += fmt.Sprintf(" (the server asks to retry after %s, longer than the %s this worker waits: the call fails; "+
				"see docs/operations.md#limits)", e.RetryAfter, m.limits.RetryAfter)
			e.Retryable, e.RetryAfter = false, 0
		case e.RetryAfter > 0:
			e.Cause += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
		}
	case status == http.StatusUnauthorized:
		switch {
		case m.keyEnv == "":
			e.Cause = fmt.Sprintf("%s requires an API key (401): set api_key_env to the environment variable that holds it", m.baseURL)
		case m.noKey:
			e.Cause = fmt.Sprintf("%s requires an API key (401) but $%s is empty: export the key there", m.baseURL, m.keyEnv)
		default:
			e.Cause = fmt.Sprintf("the API key in $%s was rejected (401): check the key", m.keyEnv)
		}
	case status == http.StatusForbidden:
		e.Cause = fmt.Sprintf("permission denied (403) for model %q at %s: the key in $%s lacks access to it: %s", model, m.baseURL, m.keyEnv, msg)
	case status == http.StatusNotFound:
		e.Cause = fmt.Sprintf("model %q not found at %s (404): check the model name, and that base_url is the API root (e.g. ends in /v1): %s", model, m.baseURL, msg)
	case status == http.StatusBadRequest && isContextLength(code, message):
		e.Cause = fmt.Sprintf("context too long for model %q (400): shorten the conversation or use a model with a larger context window: %s", model, msg)
	case status == http.StatusBadRequest:
		e.Cause = fmt.Sprintf("bad request (400) to model %q at %s: %s", model, m.baseURL, msg)
	default:
		e.Cause = fmt.Sprintf("request to model %q rejected (%d) by %s: %s", model, status, m.baseURL, msg)
	}
	return e
}

// streamError classifies an error event sent inside a 200 stream. Such
// events are usually overload or internal errors, so retryable unless the
// payload says the request itself is too long.
func (m *OpenAI) streamError(se *ssestream.StreamError, model string) *Error {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(se.Event.Data, &body)
	code, _ := body.Error.Code.(string)
	msg := body.Error.Message
	if msg == "" {
		msg = se.Message
	}
	msg = cutMessage(msg, maxMessage)
	if isContextLength(code, msg) {
		return &Error{Err: se, Cause: fmt.Sprintf("context too long for model %q: shorten the conversation or use a model with a larger context window: %s", model, m.redact(msg))}
	}
	return &Error{Retryable: true, Err: se, Cause: fmt.Sprintf("%s reported an error mid-stream: %s", m.baseURL, m.redact(msg))}
}

// isContextLength recognises OpenAI's code and the messages of servers
// (vLLM, llama.cpp, Ollama) that only say it in words.
func isContextLength(code, message string) bool {
	if code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(message)
	for _, s := range []string{"context length", "context_length", "context window", "maximum context", "too many tokens"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// isNetwork reports transport failures: refused or reset connections, EOF
// before or during the answer, timeouts.
func isNetwork(err error) bool {
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// parseRetryAfter reads retry-after-ms, then Retry-After as seconds or an
// HTTP date. A missing, malformed or past value is 0.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// protocolError describes a 200 reply that holds no stream. It does not
// quote the body: a base_url may point at an internal service, whose reply
// would otherwise be carried into history, status and logs. The content
// type is enough to tell a web page from a JSON object.
func (m *OpenAI) protocolError(res *http.Response) *Error {
	ct := "no content type"
	if res != nil && res.Header.Get("Content-Type") != "" {
		ct = cutMessage(res.Header.Get("Content-Type"), 80)
	}
	return &Error{Status: http.StatusOK, Err: ErrProtocol, Cause: fmt.Sprintf(
		"%s answered 200 with a body (%s) that is not an OpenAI-compatible event stream (not quoted here: it may come from another service): "+
			"check that base_url is the API root of an OpenAI-compatible server (often ending in /v1), not a web page, a sign-in page or another service",
		m.baseURL, ct)}
}

// maxMessage bounds a provider's error message quoted in a failure.
const maxMessage = 300

// cutMessage shortens a server-provided message to at most n bytes, at a
// rune boundary, as valid UTF-8.
func cutMessage(s string, n int) string {
	if cut, ok := runes.Truncate(strings.ToValidUTF8(s, "?"), n); ok {
		return cut + runes.Mark
	}
	return strings.ToValidUTF8(s, "?")
}

// maxErrorBody is how much of an error reply is read: an OpenAI error
// object is a few hundred bytes.
const maxErrorBody = 64 << 10

// headBytes is how much of a reply's body is kept to recognise and quote a
// reply that is not a stream.
const headBytes = 200

// bodyHead keeps the first bytes of a successful reply's body as the
// stream decoder reads it.
type bodyHead struct {
	buf   []byte
	limit eventLimiter
}

// record is a client middleware that tees the body of a 200 reply into h.
func (h *bodyHead) record(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	switch {
	case err != nil || res == nil || res.Body == nil:
	case res.StatusCode == http.StatusOK:
		res.Body = &headReader{ReadCloser: res.Body, h: h}
	default:
		// An error body is read whole by the client: only its start is kept.
		res.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(res.Body, maxErrorBody), res.Body}
	}
	return res, err
}

type headReader struct {
	io.ReadCloser
	h *bodyHead
}

func (r *headReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if lerr := r.h.limit.scan(p[:n]); lerr != nil {
		return 0, lerr
	}
	if room := headBytes - len(r.h.buf); room > 0 {
		r.h.buf = append(r.h.buf, p[:min(n, room)]...)
	}
	return n, err
}

// eventStream reports whether the body was empty (a stream cut before its
// first event) or began like server-sent events.
func (h *bodyHead) eventStream() bool {
	text := strings.TrimLeft(string(h.buf), " \t\r\n\ufeff")
	if text == "" {
		return true
	}
	for _, field := range []string{"data:", "event:", "id:", "retry:", ":"} {
		if strings.HasPrefix(text, field) {
			return true
		}
	}
	return false
}

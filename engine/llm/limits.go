package llm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults of Limits. A reply of 1 MiB is some 250,000 tokens, more than
// any model's output limit; ten minutes is longer than any honest reply
// takes to stream.
const (
	DefaultReplyBytes    = 1 << 20
	DefaultReplyDuration = 10 * time.Minute
	// DefaultCallArgBytes is the engine's limit on one tool call's
	// arguments (tools.MaxCallBytes).
	DefaultCallArgBytes = 256 << 10
	// DefaultRetryAfter is the longest wait a server may ask for before a
	// retry: a session's agents run side by side, and one parked for an
	// hour holds the whole session up.
	DefaultRetryAfter = 2 * time.Minute
)

// eventSlack is what one stream event may hold besides the reply text
// itself: its JSON envelope, ids, usage.
const eventSlack = 64 << 10

// Limits bound what one model call can cost the worker, whatever the server
// sends: one worker serves many sessions, and a reply that never ends would
// otherwise grow until the process is killed with every session on it. They
// are checked while the reply streams, chunk by chunk. Zero fields take the
// defaults.
type Limits struct {
	// ReplyBytes bounds the reply's text: content, refusal, and every tool
	// call's name and arguments together. One stream event may be at most
	// twice this (JSON escaping) plus a small envelope.
	ReplyBytes int64
	// ReplyDuration bounds the time from sending the request to the
	// reply's end.
	ReplyDuration time.Duration
	// CallArgBytes bounds one tool call's arguments. A reply that goes over
	// it is stopped there and returned with that call's arguments cut just
	// past the limit, so the engine refuses the call and tells the model,
	// instead of failing the step.
	CallArgBytes int
	// RetryAfter bounds the wait a server may ask for (Retry-After). A
	// longer one fails the call for good: the session goes on without
	// the agent instead of waiting.
	RetryAfter time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.ReplyBytes <= 0 {
		l.ReplyBytes = DefaultReplyBytes
	}
	if l.ReplyDuration <= 0 {
		l.ReplyDuration = DefaultReplyDuration
	}
	if l.CallArgBytes <= 0 {
		l.CallArgBytes = DefaultCallArgBytes
	}
	if l.RetryAfter <= 0 {
		l.RetryAfter = DefaultRetryAfter
	}
	return l
}

// maxEvent bounds one server-sent event as it is read off the wire.
func (l Limits) maxEvent() int64 { return 2*l.ReplyBytes + eventSlack }

// ErrReplyLimit marks a call stopped because its reply went over a limit of
// Limits. The error is an *Error (not retryable: the same request would
// likely run into it again) whose Cause names the limit and how to change it.
var ErrReplyLimit = errors.New("the model's reply went over a limit")

// IsReplyLimit reports whether err is a call stopped by Limits.
func IsReplyLimit(err error) bool { return errors.Is(err, ErrReplyLimit) }

// errEventTooLarge is returned by the body reader for an event over the
// limit; Complete turns it into an ErrReplyLimit error.
var errEventTooLarge = errors.New("stream event over the limit")

// limitError is the failure of a call stopped by a limit.
func (m *OpenAI) limitError(model, what string) *Error {
	return &Error{Err: ErrReplyLimit, Cause: fmt.Sprintf(
		"the reply of model %q at %s was stopped: %s; the call counts as failed "+
			"(the worker's operator sets this limit, see docs/operations.md#limits)", model, m.baseURL, what)}
}

// eventLimiter bounds the bytes of each server-sent event as the stream
// decoder reads the body, so that an event that never ends (a line without
// a newline, data lines without the blank line that closes the event) is
// cut before it is held in memory. A blank line ("\n\n", "\r\n\r\n") ends
// an event.
type eventLimiter struct {
	max     int64
	event   int64 // bytes since the last blank line
	lineLen int64 // bytes since the last newline, CR not counted
}

func (l *eventLimiter) scan(p []byte) error {
	for _, b := range p {
		l.event++
		switch b {
		case '\r':
		case '\n':
			if l.lineLen == 0 {
				l.event = 0
			}
			l.lineLen = 0
		default:
			l.lineLen++
		}
		if l.event > l.max {
			return errEventTooLarge
		}
	}
	return nil
}

// Variables with which a worker's operator changes Limits.
const (
	EnvMaxReplyBytes   = "CONCLAVE_MAX_REPLY_BYTES"
	EnvMaxReplySeconds = "CONCLAVE_MAX_REPLY_SECONDS"
	EnvMaxRetryAfter   = "CONCLAVE_MAX_RETRY_AFTER_SECONDS"
)

// LimitsFromEnv reads the operator's Limits through getenv; an unset
// variable keeps the default, a malformed one is an error naming it.
func LimitsFromEnv(getenv func(string) string) (Limits, error) {
	var l Limits
	if v := strings.TrimSpace(getenv(EnvMaxReplyBytes)); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1024 {
			return Limits{}, fmt.Errorf("%s=%q is not a number of bytes of at least 1024, e.g. %d", EnvMaxReplyBytes, v, DefaultReplyBytes)
		}
		l.ReplyBytes = n
	}
	if v := strings.TrimSpace(getenv(EnvMaxReplySeconds)); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 24*3600 {
			return Limits{}, fmt.Errorf("%s=%q is not a number of seconds from 1 to 86400, e.g. %d", EnvMaxReplySeconds, v, int(DefaultReplyDuration.Seconds()))
		}
		l.ReplyDuration = time.Duration(n) * time.Second
	}
	if v := strings.TrimSpace(getenv(EnvMaxRetryAfter)); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 24*3600 {
			return Limits{}, fmt.Errorf("%s=%q is not a number of seconds from 1 to 86400, e.g. %d", EnvMaxRetryAfter, v, int(DefaultRetryAfter.Seconds()))
		}
		l.RetryAfter = time.Duration(n) * time.Second
	}
	return l.withDefaults(), nil
}

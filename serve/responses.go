package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/coord"
)

// The fields of POST /v1/responses the server reads, and the ones it
// accepts and ignores (sampling settings are the team's).
var (
	responseFields = []string{"model", "input", "instructions", "previous_response_id", "background", "stream", "max_output_tokens"}
	ignoredFields  = []string{"temperature", "top_p", "user", "metadata", "store", "stream_options", "presence_penalty", "frequency_penalty", "seed", "parallel_tool_calls", "truncation"}
)

// metadata is what a run adds to OpenAI's shapes, MassGen's
// massgen_metadata under Conclave's name.
type metadata struct {
	SessionID    string            `json:"session_id"`
	Status       string            `json:"status"`
	Winner       string            `json:"winner,omitempty"`
	DecidedBy    string            `json:"decided_by,omitempty"`
	Votes        map[string]int    `json:"votes,omitempty"`
	Answers      []answerRef       `json:"answers"`
	FailedAgents map[string]string `json:"failed_agents,omitempty"`
	CostUSD      *float64          `json:"cost_usd"`
	Truncated    bool              `json:"truncated,omitempty"`
}

func (t *tracker) metadata(id string) metadata {
	m := metadata{SessionID: id, Status: "in_progress", Answers: t.answers}
	if m.Answers == nil {
		m.Answers = []answerRef{}
	}
	u := t.usage
	if t.end != nil {
		m.Status = t.end.state
		if res := t.end.result; res != nil {
			m.Winner, m.DecidedBy, m.Votes, m.FailedAgents, m.Truncated = res.Winner, res.Status, res.Votes, res.FailedAgents, res.Truncated
			u = res.Usage
		}
	}
	if !u.CostUnknown() {
		c := u.CostUSD
		m.CostUSD = &c
	}
	return m
}

// usage is the run's real total: the result's when it completed (every
// agent step and the presenter), else the sum of the steps recorded so far.
func (t *tracker) total() coord.Usage {
	if t.end != nil && t.end.result != nil {
		return t.end.result.Usage
	}
	return t.usage
}

func (t *tracker) finalText() string {
	if t.end != nil && t.end.result != nil {
		return t.end.result.FinalAnswer
	}
	return ""
}

// response is the Responses API object for a run.
func (s *Server) response(r *run, t *tracker, reasoning string) map[string]any {
	state := r.state()
	if t.end != nil {
		state = t.end.state
	}
	return s.responseAs(r, t, reasoning, state)
}

// responseAs is the response object in a given state.
func (s *Server) responseAs(r *run, t *tracker, reasoning, state string) map[string]any {
	u := t.total()
	out := []any{}
	if reasoning != "" {
		out = append(out, map[string]any{"type": "reasoning", "id": "rs_" + r.id, "summary": []any{},
			"content": []any{map[string]any{"type": "reasoning_text", "text": reasoning}}})
	}
	if state == "completed" {
		out = append(out, messageItem(r.id, t.finalText(), "completed"))
	}
	var errObj any
	if t.end != nil && t.end.state != "completed" {
		errObj = map[string]any{"code": "run_" + t.end.state, "message": t.end.message}
	}
	return map[string]any{
		"id": r.id, "object": "response", "created_at": r.created.Unix(), "status": state,
		"model": r.memo.Model, "output": out, "error": errObj, "incomplete_details": nil,
		"usage": map[string]any{
			"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		},
		"conclave": withMetaStatus(t.metadata(r.id), state),
	}
}

func withMetaStatus(m metadata, state string) metadata {
	m.Status = state
	return m
}

func messageItem(id, text, status string) map[string]any {
	return map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": status,
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

func (s *Server) createResponse(w http.ResponseWriter, r *http.Request, c caller) {
	fields, err := readBody(w, r, responseFields, ignoredFields)
	if err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		model, instructions, previous string
		background, stream            bool
		maxTokens                     *int
	}
	for name, v := range map[string]any{"model": &req.model, "instructions": &req.instructions, "previous_response_id": &req.previous,
		"background": &req.background, "stream": &req.stream, "max_output_tokens": &req.maxTokens} {
		if err := field(fields, name, v); err != nil {
			writeError(w, err)
			return
		}
	}
	if req.model == "" {
		writeError(w, badRequest("model", "model is required: one of the teams GET /v1/models lists"))
		return
	}
	var conv []message
	if req.previous != "" {
		prev, err := s.previous(r.Context(), c, req.previous)
		if err != nil {
			writeError(w, err)
			return
		}
		conv = prev
	}
	if req.instructions != "" {
		conv = append(conv, message{Role: "system", Content: req.instructions})
	}
	input, err := responseInput(fields["input"], s.opts.MaxMessages)
	if err != nil {
		writeError(w, err)
		return
	}
	conv = append(conv, input...)
	if len(conv) > s.opts.MaxMessages {
		writeError(w, badRequest("input", "the conversation has %d messages, over this server's limit of %d; start a new one", len(conv), s.opts.MaxMessages))
		return
	}
	if req.stream || !req.background {
		done, err := s.follow(c.key)
		if err != nil {
			writeError(w, err)
			return
		}
		defer done()
	}
	run, err := s.start(r.Context(), c, req.model, conv, req.maxTokens, "max_output_tokens")
	if err != nil {
		writeError(w, err)
		return
	}
	switch {
	case req.stream:
		s.streamResponse(w, r, run, -1)
	case req.background:
		writeJSON(w, http.StatusOK, s.response(run, newTracker(s.dc), ""))
	default:
		s.writeResponse(w, r, run, true)
	}
}

// responseInput reads input: a string (one user message) or a list of
// messages.
func responseInput(raw json.RawMessage, max int) ([]message, error) {
	if len(raw) == 0 {
		return nil, badRequest("input", "input is required: the user's message")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if strings.TrimSpace(text) == "" {
			return nil, badRequest("input", "input is empty: it is the task")
		}
		return []message{{Role: "user", Content: text}}, nil
	}
	return parseMessages(raw, "input", max)
}

// previous is the conversation of an earlier run of this key, with its
// final answer, for previous_response_id.
func (s *Server) previous(ctx context.Context, c caller, id string) ([]message, error) {
	r, err := s.lookup(ctx, c, id)
	if err != nil {
		var e *apiError
		if errors.As(err, &e) && e.status == http.StatusNotFound {
			e.param = "previous_response_id"
		}
		return nil, err
	}
	if r.state() != "completed" {
		return nil, badRequest("previous_response_id", "response %s is %s; a conversation continues from a completed response", id, r.state())
	}
	t, _, err := s.read(ctx, r, false)
	if err != nil {
		return nil, serverError("read the earlier run from Temporal: " + err.Error())
	}
	conv := append([]message{}, r.memo.Conversation...)
	return append(conv, message{Role: "assistant", Content: t.finalText()}), nil
}

// read walks the run's history and returns the tracker and its progress
// lines as one text (the reasoning).
func (s *Server) read(ctx context.Context, r *run, follow bool) (*tracker, string, error) {
	var lines strings.Builder
	t, err := s.walk(ctx, r, follow, func(_ int, p progress) error { lines.WriteString(p.Text); return nil })
	return t, lines.String(), err
}

func (s *Server) getResponse(w http.ResponseWriter, r *http.Request, c caller) {
	run, err := s.lookup(r.Context(), c, r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	stream, _ := strconv.ParseBool(q.Get("stream"))
	if r.ContentLength != 0 {
		// openai-go's GetStreaming asks with a JSON body {"stream": true}.
		fields, err := readBody(w, r, []string{"stream"}, nil)
		if err != nil {
			writeError(w, err)
			return
		}
		var bodyStream bool
		if err := field(fields, "stream", &bodyStream); err != nil {
			writeError(w, err)
			return
		}
		stream = stream || bodyStream
	}
	if stream {
		after := int64(-1)
		if v := q.Get("starting_after"); v != "" {
			if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < -1 {
				writeError(w, badRequest("starting_after", "starting_after must be a sequence number (an integer of at least -1)"))
				return
			}
		}
		done, err := s.follow(c.key)
		if err != nil {
			writeError(w, err)
			return
		}
		defer done()
		s.streamResponse(w, r, run, after)
		return
	}
	s.writeResponse(w, r, run, false)
}

// writeResponse answers with the response object; with follow, once the
// run has ended (a foreground request). A client that goes away leaves the
// run going (GET /v1/responses/{id}).
func (s *Server) writeResponse(w http.ResponseWriter, r *http.Request, run *run, follow bool) {
	t, reasoning, err := s.read(r.Context(), run, follow)
	if err != nil {
		if r.Context().Err() == nil {
			writeError(w, serverError("read the run from Temporal: "+err.Error()))
		}
		return
	}
	writeJSON(w, http.StatusOK, s.response(run, t, reasoning))
}

func (s *Server) cancelResponse(w http.ResponseWriter, r *http.Request, c caller) {
	run, err := s.lookup(r.Context(), c, r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	if run.state() == "queued" || run.state() == "in_progress" {
		if err := s.opts.Client.CancelWorkflow(r.Context(), run.id, ""); err != nil {
			writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: "server_error", msg: "Temporal did not take the cancellation; try again"})
			return
		}
		s.log.Info("run cancelled", "id", run.id, "key", c.key)
		// The workflow fences its steps and records the cancellation; the
		// answer says how it ended when that is quick.
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		_ = s.opts.Client.GetWorkflow(ctx, run.id, "").Get(ctx, nil)
		cancel()
		if again, err := s.lookup(r.Context(), c, run.id); err == nil {
			run = again
		}
	}
	s.writeResponse(w, r, run, false)
}

// streamResponse writes the run's events as Responses API server-sent
// events, from sequence number after+1. Events 0-2 open the response; one
// reasoning_text.delta per progress line follows; the output and the end
// close it. Every event's number is derived from the history alone.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, run *run, after int64) {
	sse := newSSE(w)
	defer sse.keepAlive(keepAliveEvery)()
	var seq int64
	emit := func(v map[string]any) error {
		defer func() { seq++ }()
		if seq <= after {
			return nil
		}
		v["sequence_number"] = seq
		return sse.send(v)
	}
	// The opening events describe the run as it began, whenever they are
	// read, so a reader sees the same events 0 and 1 after a reconnect.
	begun := newTracker(s.dc)
	rsID, msgID := "rs_"+run.id, "msg_"+run.id
	if err := errors.Join(
		emit(map[string]any{"type": "response.created", "response": s.responseAs(run, begun, "", "queued")}),
		emit(map[string]any{"type": "response.in_progress", "response": s.responseAs(run, begun, "", "in_progress")}),
		emit(map[string]any{"type": "response.output_item.added", "output_index": 0,
			"item": map[string]any{"type": "reasoning", "id": rsID, "summary": []any{}, "content": []any{}}}),
	); err != nil {
		return
	}
	var lines strings.Builder
	t, err := s.walk(r.Context(), run, true, func(_ int, p progress) error {
		lines.WriteString(p.Text)
		return emit(map[string]any{"type": "response.reasoning_text.delta", "item_id": rsID, "output_index": 0, "content_index": 0, "delta": p.Text})
	})
	if err != nil {
		if r.Context().Err() == nil {
			_ = sse.send(map[string]any{"type": "error", "message": "following the run on Temporal failed; reconnect with starting_after to go on"})
		}
		return
	}
	final := s.response(run, t, lines.String())
	if t.end == nil || t.end.state != "completed" {
		_ = emit(map[string]any{"type": "response.failed", "response": final})
		sse.done()
		return
	}
	text := t.finalText()
	_ = errors.Join(
		emit(map[string]any{"type": "response.output_item.added", "output_index": 1, "item": messageItem(run.id, "", "in_progress")}),
		emit(map[string]any{"type": "response.output_text.delta", "item_id": msgID, "output_index": 1, "content_index": 0, "delta": text}),
		emit(map[string]any{"type": "response.output_text.done", "item_id": msgID, "output_index": 1, "content_index": 0, "text": text}),
		emit(map[string]any{"type": "response.output_item.done", "output_index": 1, "item": messageItem(run.id, text, "completed")}),
		emit(map[string]any{"type": "response.completed", "response": final}),
	)
	sse.done()
}

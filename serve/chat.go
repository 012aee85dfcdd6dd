package serve

import (
	"fmt"
	"net/http"
)

var chatFields = []string{"model", "messages", "stream", "max_tokens", "max_completion_tokens", "n"}

// chat answers /v1/chat/completions: the conversation's last user message
// is the task, the earlier ones its context. The run is a workflow like any
// other, so a client that disconnects leaves it going; its id (the
// completion's id) reads it back from /v1/responses/{id}.
func (s *Server) chat(w http.ResponseWriter, r *http.Request, c caller) {
	fields, err := readBody(w, r, chatFields, ignoredFields)
	if err != nil {
		writeError(w, err)
		return
	}
	var model string
	var stream bool
	var maxTokens, maxCompletion *int
	n := 1
	for name, v := range map[string]any{"model": &model, "stream": &stream, "max_tokens": &maxTokens, "max_completion_tokens": &maxCompletion, "n": &n} {
		if err := field(fields, name, v); err != nil {
			writeError(w, err)
			return
		}
	}
	if n != 1 {
		writeError(w, badRequest("n", "n must be 1: a team gives one final answer per run"))
		return
	}
	if model == "" {
		writeError(w, badRequest("model", "model is required: one of the teams GET /v1/models lists"))
		return
	}
	raw, ok := fields["messages"]
	if !ok {
		writeError(w, badRequest("messages", "messages is required"))
		return
	}
	conv, err := parseMessages(raw, "messages", s.opts.MaxMessages)
	if err != nil {
		writeError(w, err)
		return
	}
	tokensParam := "max_tokens"
	if maxCompletion != nil {
		maxTokens, tokensParam = maxCompletion, "max_completion_tokens"
	}
	done, err := s.follow(c.key)
	if err != nil {
		writeError(w, err)
		return
	}
	defer done()
	run, err := s.start(r.Context(), c, model, conv, maxTokens, tokensParam)
	if err != nil {
		writeError(w, err)
		return
	}
	id, created := run.id, run.created.Unix()
	if !stream {
		t, reasoning, err := s.read(r.Context(), run, true)
		if err != nil {
			if r.Context().Err() == nil {
				writeError(w, serverError(fmt.Sprintf("following run %s on Temporal failed; it goes on: GET /v1/responses/%s", id, id)))
			}
			return
		}
		if e := runError(id, t); e != nil {
			writeError(w, e)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": t.finalText(), "reasoning_content": reasoning}}},
			"usage": chatUsage(t), "conclave_metadata": t.metadata(id),
		})
		return
	}
	sse := newSSE(w)
	defer sse.keepAlive(keepAliveEvery)()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if sse.send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) != nil {
		return
	}
	t, err := s.walk(r.Context(), run, true, func(_ int, p progress) error {
		return sse.send(chunk(map[string]any{"reasoning_content": p.Text}, nil))
	})
	if err != nil {
		if r.Context().Err() == nil {
			_ = sse.send(errorBody(serverError(fmt.Sprintf("following run %s on Temporal failed; it goes on: GET /v1/responses/%s", id, id))))
		}
		return
	}
	if e := runError(id, t); e != nil {
		_ = sse.send(errorBody(e))
		sse.done()
		return
	}
	if sse.send(chunk(map[string]any{"content": t.finalText()}, nil)) != nil {
		return
	}
	last := chunk(map[string]any{}, "stop")
	last["usage"] = chatUsage(t)
	last["conclave_metadata"] = t.metadata(id)
	_ = sse.send(last)
	sse.done()
}

// runError is the error a chat answer gives for a run that did not
// complete.
func runError(id string, t *tracker) *apiError {
	if t.end == nil || t.end.state == "completed" {
		return nil
	}
	return &apiError{status: http.StatusInternalServerError, typ: "server_error", code: "run_" + t.end.state,
		msg: fmt.Sprintf("run %s %s: %s; its stored answers are in session %s (GET /v1/responses/%s)", id, t.end.state, t.end.message, id, id)}
}

func chatUsage(t *tracker) map[string]any {
	u := t.total()
	return map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens}
}

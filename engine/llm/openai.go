package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// DefaultBaseURL is OpenAI's API root, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultAPIKeyEnv is read for OpenAI itself when Config.APIKeyEnv is empty.
const DefaultAPIKeyEnv = "OPENAI_API_KEY"

// placeholderKey is sent to endpoints that need no key (Ollama, llama.cpp):
// some of them still reject a request without an Authorization header.
const placeholderKey = "no-key"

// Config says how to reach one model. It holds the name of the variable with
// the key, never the key, so it can be logged and stored.
type Config struct {
	// Model is the default model name for requests that name none.
	Model string `json:"model"`
	// BaseURL is the API root of any OpenAI-compatible server; empty is OpenAI.
	BaseURL string `json:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the key.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// Prices gives per-model prices for CostUSD.
	Prices Prices `json:"prices,omitempty"`
	// KeyRequired: the endpoint refuses anonymous calls, so a missing key
	// fails here, naming the variable, instead of as a 401 mid-session.
	KeyRequired bool `json:"key_required,omitempty"`
	// Params are sent with every request, in addition to what the Request
	// itself sets.
	Params Params `json:"params,omitzero"`
	// Limits bound each call's reply; zero fields take the defaults.
	Limits Limits `json:"-"`
	// Guard, when set, checks every request and connection of the default
	// client (the worker's egress rule).
	Guard Guard `json:"-"`
	// HTTPClient replaces the default client (tests, proxies); Guard is
	// then not applied.
	HTTPClient *http.Client `json:"-"`
}

// Params are a backend's sampling and provider settings. Zero values are not
// sent, leaving the server's default.
type Params struct {
	TopP *float64 `json:"top_p,omitempty"`
	// ReasoningEffort is sent as reasoning_effort (low, medium, high, …).
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// Verbosity is sent as verbosity (low, medium, high).
	Verbosity string `json:"verbosity,omitempty"`
	// ExtraBody is merged into the request body last, for provider fields
	// the SDK does not model (top_k, chat_template_kwargs, thinking, …).
	ExtraBody map[string]any `json:"extra_body,omitempty"`
}

// OpenAI is a Model on any OpenAI-compatible chat-completions endpoint. It
// always streams, so that a long generation can heartbeat and a lost
// connection is noticed, and it makes exactly one HTTP request per call:
// retrying is the caller's (Temporal's) job.
type OpenAI struct {
	model   string
	baseURL string
	keyEnv  string
	// noKey: the placeholder is being sent, so a 401 means "set a key", not
	// "the key is wrong".
	noKey    bool
	prices   Prices
	defaults Params
	// maxCompletionTokens: OpenAI wants max_completion_tokens (its reasoning
	// models reject max_tokens), while many compatible servers only know
	// max_tokens.
	maxCompletionTokens bool
	limits              Limits
	svc                 openai.ChatCompletionService
	// redact removes the key from server-provided text. The key lives only in
	// this closure and in the client's options, never in a field that could
	// be printed or serialized.
	redact func(string) string
}

// New builds an OpenAI model from cfg and the key itself. An empty key sends
// a placeholder (for local servers).
func New(cfg Config, apiKey string) (*OpenAI, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("llm: no model configured: set model for this agent's backend")
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: base_url %q is not an http(s) URL: use e.g. http://localhost:11434/v1", cfg.BaseURL)
	}
	if cfg.Guard != nil {
		if err := cfg.Guard.CheckURL(u); err != nil {
			return nil, err
		}
	}
	httpClient := cfg.HTTPClient
	if httpClient == nil {
		httpClient = guardedClient(cfg.Guard)
	}
	key := apiKey
	if key == "" {
		key = placeholderKey
	}
	redact := func(s string) string { return s }
	if len(apiKey) >= 6 {
		redact = func(s string) string { return strings.ReplaceAll(s, apiKey, "[redacted]") }
	}
	return &OpenAI{
		model:               cfg.Model,
		baseURL:             base,
		keyEnv:              cfg.APIKeyEnv,
		noKey:               apiKey == "",
		prices:              cfg.Prices,
		defaults:            cfg.Params,
		maxCompletionTokens: u.Host == "api.openai.com" || strings.HasSuffix(u.Host, ".openai.azure.com"),
		limits:              cfg.Limits.withDefaults(),
		// The service is built directly, not through openai.NewClient, so
		// ambient OPENAI_* variables (base URL, organization, custom headers)
		// cannot redirect or decorate a request the config describes.
		svc: openai.NewChatCompletionService(
			option.WithBaseURL(base),
			option.WithAPIKey(key),
			option.WithHTTPClient(httpClient),
			option.WithMaxRetries(0),
		),
		redact: redact,
	}, nil
}

// NewFromEnv builds an OpenAI model reading the key through getenv (os.Getenv
// in production) from the variable cfg names. OpenAI itself without a key is
// an error naming the variable; a base_url elsewhere may need no key.
func NewFromEnv(cfg Config, getenv func(string) string) (*OpenAI, error) {
	openAIHost := cfg.BaseURL == "" || strings.Contains(cfg.BaseURL, "://api.openai.com")
	if cfg.APIKeyEnv == "" && openAIHost {
		cfg.APIKeyEnv = DefaultAPIKeyEnv
	}
	key := ""
	if cfg.APIKeyEnv != "" {
		key = strings.TrimSpace(getenv(cfg.APIKeyEnv))
	}
	if key == "" && (openAIHost || cfg.KeyRequired) {
		if cfg.APIKeyEnv == "" {
			return nil, fmt.Errorf("llm: no API key for model %q: %s needs one; set api_key_env to the variable that holds it", cfg.Model, cfg.BaseURL)
		}
		return nil, fmt.Errorf("llm: no API key for model %q: environment variable %s is empty or unset; export the key there, or set base_url to a local endpoint that needs none",
			cfg.Model, cfg.APIKeyEnv)
	}
	return New(cfg, key)
}

// Complete streams one completion and accumulates it into a Response. The
// reply is bounded by the model's Limits as it streams: over ReplyBytes or
// ReplyDuration the call stops and fails with an ErrReplyLimit error; a tool
// call over CallArgBytes stops the reply there and returns it.
func (m *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	model := req.Model
	if model == "" {
		model = m.model
	}
	params, err := m.params(model, req)
	if err != nil {
		return Response{}, err
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, m.limits.ReplyDuration, ErrReplyLimit)
	defer cancel()
	var res *http.Response
	head := bodyHead{limit: eventLimiter{max: m.limits.maxEvent()}}
	stream := m.svc.NewStreaming(callCtx, params, option.WithResponseInto(&res), option.WithMiddleware(head.record))
	defer func() { _ = stream.Close() }()

	var acc openai.ChatCompletionAccumulator
	var text int64
	args := map[int64]int{}
	chunks := 0
	for stream.Next() {
		chunks++
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			return Response{}, &Error{Cause: fmt.Sprintf("%s sent a stream chunk that does not fit the answer so far: the server is not OpenAI-compatible enough", m.baseURL)}
		}
		if req.OnChunk != nil {
			req.OnChunk()
		}
		for _, c := range chunk.Choices {
			text += int64(len(c.Delta.Content) + len(c.Delta.Refusal))
			for _, tc := range c.Delta.ToolCalls {
				text += int64(len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments))
				args[tc.Index] += len(tc.Function.Arguments)
				if args[tc.Index] > m.limits.CallArgBytes && len(acc.Choices) > 0 {
					return m.cutAtCall(model, &acc, tc.Index), nil
				}
			}
		}
		if text > m.limits.ReplyBytes {
			return Response{}, m.limitError(model, fmt.Sprintf("its text went over %d bytes (reply bytes limit)", m.limits.ReplyBytes))
		}
	}
	if err := stream.Err(); err != nil {
		switch {
		case ctx.Err() == nil && context.Cause(callCtx) == ErrReplyLimit:
			return Response{}, m.limitError(model, fmt.Sprintf("it took longer than %s (reply duration limit)", m.limits.ReplyDuration))
		case errors.Is(err, errEventTooLarge):
			return Response{}, m.limitError(model, fmt.Sprintf("one stream event went over %d bytes (twice the reply bytes limit)", m.limits.maxEvent()))
		}
		return Response{}, m.classify(ctx, err, res, model)
	}
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	if chunks == 0 && !head.eventStream() {
		return Response{}, m.protocolError(res)
	}
	// A stream may end cleanly at the TCP level and still be cut short (a
	// proxy closing at a chunk boundary): without a finish reason the answer
	// is incomplete, and asking again is the fix.
	if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
		return Response{}, &Error{Retryable: true,
			Cause: fmt.Sprintf("the stream from %s ended before the model finished its answer", m.baseURL)}
	}
	return m.response(model, &acc), nil
}

// cutAtCall ends a reply whose tool call at index went over CallArgBytes:
// the reply so far, up to that call, whose arguments are kept only up to
// just past the limit (the engine refuses such a call and tells the model).
// Later calls had not begun: a call's arguments stream before the next.
func (m *OpenAI) cutAtCall(model string, acc *openai.ChatCompletionAccumulator, index int64) Response {
	resp := m.response(model, acc)
	keep := resp.Message.ToolCalls[:0]
	for i, c := range resp.Message.ToolCalls {
		keep = append(keep, c)
		if int64(i) == index || len(c.Arguments) > m.limits.CallArgBytes {
			keep[len(keep)-1].Arguments = c.Arguments[:min(len(c.Arguments), m.limits.CallArgBytes+1)]
			break
		}
	}
	resp.Message.ToolCalls = keep
	resp.FinishReason = "tool_calls"
	return resp
}

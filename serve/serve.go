// Package serve is Conclave's OpenAI-compatible front door: a team of
// agents answers /v1/chat/completions and /v1/responses as if it were one
// model. Every request is an ordinary Coordination workflow whose id is the
// response id, so a run outlives the HTTP request, the client and this
// process; everything a client can read back (status, events, output,
// usage) comes from the workflow's history, never from this process's
// memory.
package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
)

// Defaults of the operator's limits (Options).
const (
	DefaultMaxRequestBytes = 1 << 20
	DefaultMaxMessages     = 256
	DefaultMaxRunsPerKey   = 4
	DefaultMaxRuns         = 64
	// DefaultMaxStreamsPerKey bounds the requests of one key that follow
	// a run (streams and foreground waits), each a connection held open.
	DefaultMaxStreamsPerKey = 16
	// DefaultBodyReadTimeout bounds reading a request body, so a client
	// sending slowly (or not at all) cannot hold a connection; streaming
	// answers have no limit.
	DefaultBodyReadTimeout = 30 * time.Second
)

// Team is one model id the server offers: a team of agents from the
// operator's config file.
type Team struct {
	Name   string
	Config config.Config
}

// Key is one API key the server accepts. Name is what logs, memos and
// search attributes record; the secret never leaves this process.
type Key struct {
	Name   string
	Secret string
}

// Options configure a Server. Client, Teams and TaskQueue are required.
type Options struct {
	Client    client.Client
	TaskQueue string
	Teams     []Team
	// Keys are the accepted bearer keys; none means no authentication,
	// which Listen allows on loopback only.
	Keys []Key
	// DataConverter decodes history payloads and memos; nil is the SDK's
	// default. It must match the client's (payload encryption).
	DataConverter converter.DataConverter
	// KeySearchAttribute, when true, records the key's name in the
	// ConclaveServeKey search attribute (it must be registered).
	KeySearchAttribute bool

	MaxRequestBytes  int64 // a request body over this is refused (413) while it is read
	MaxMessages      int   // messages in one request
	MaxRunsPerKey    int   // runs of one key not yet ended
	MaxRuns          int   // runs of the whole server not yet ended (503 beyond)
	MaxStreamsPerKey int   // open streams and foreground waits per key (429 beyond)
	// BodyReadTimeout bounds the time from a request's headers to the end
	// of its body (DefaultBodyReadTimeout when zero).
	BodyReadTimeout time.Duration

	// Logger gets one line per request (never its messages at info).
	Logger *slog.Logger
}

// Server answers the OpenAI-compatible API. Its only state is the count of
// runs in flight per key, which New rebuilds from Temporal.
type Server struct {
	opts  Options
	dc    converter.DataConverter
	teams map[string]Team
	keys  []keyHash
	log   *slog.Logger

	mu      sync.Mutex
	running map[string]map[string]bool // key name → workflow ids not yet ended
	streams map[string]int             // key name → requests following a run
	ctx     context.Context            // ends the run watchers
	stop    context.CancelFunc
}

type keyHash struct {
	name string
	sum  [sha256.Size]byte
}

// New checks the options and counts the runs still in flight for each key
// (started by an earlier process), so the per-key cap holds across restarts.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Client == nil || opts.TaskQueue == "" {
		return nil, errors.New("serve: a Temporal client and a task queue are required")
	}
	if len(opts.Teams) == 0 {
		return nil, errors.New("serve: no team to serve; give at least one --config")
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxMessages <= 0 {
		opts.MaxMessages = DefaultMaxMessages
	}
	if opts.MaxRunsPerKey <= 0 {
		opts.MaxRunsPerKey = DefaultMaxRunsPerKey
	}
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = DefaultMaxRuns
	}
	if opts.MaxStreamsPerKey <= 0 {
		opts.MaxStreamsPerKey = DefaultMaxStreamsPerKey
	}
	if opts.BodyReadTimeout <= 0 {
		opts.BodyReadTimeout = DefaultBodyReadTimeout
	}
	s := &Server{opts: opts, dc: opts.DataConverter, teams: map[string]Team{}, log: opts.Logger, running: map[string]map[string]bool{}, streams: map[string]int{}}
	if s.dc == nil {
		s.dc = converter.GetDefaultDataConverter()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, t := range opts.Teams {
		if _, dup := s.teams[t.Name]; dup {
			return nil, fmt.Errorf("serve: two teams are named %q; name one with --config NAME=FILE", t.Name)
		}
		s.teams[t.Name] = t
	}
	if err := checkKeys(opts.Keys); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	for _, k := range opts.Keys {
		s.keys = append(s.keys, keyHash{name: k.Name, sum: sha256.Sum256([]byte(k.Secret))})
	}
	s.ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	if err := s.recoverRunning(ctx); err != nil {
		// A namespace without list queries still serves; only the runs an
		// earlier process started escape the caps until they end.
		s.log.Warn("the runs in progress could not be counted; the per-key caps count only the runs this process starts", "error", err)
	}
	return s, nil
}

// Close stops watching runs; the runs themselves go on.
func (s *Server) Close() { s.stop() }

// Handler routes the API. A request's body is read only once the request
// is known to be authorized for an endpoint that takes one, and within the
// body read timeout: an answer given without reading it (401, 404, 405…)
// closes the connection rather than wait for a body that may never come.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasBody(r) {
			mux.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		w.Header().Set("Connection", "close")
		_ = rc.SetReadDeadline(time.Now().Add(s.bodyTimeout()))
		mux.ServeHTTP(w, r)
		if w.Header().Get("Connection") == "close" {
			// The body was not read (readAll lifts the close): the
			// connection ends now, without waiting for the rest of it.
			_ = rc.SetReadDeadline(time.Now())
		}
	})
}

func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

func (s *Server) bodyTimeout() time.Duration {
	if s.opts.BodyReadTimeout > 0 {
		return s.opts.BodyReadTimeout
	}
	return DefaultBodyReadTimeout
}

func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /v1/models", s.authed(s.models))
	mux.HandleFunc("POST /v1/chat/completions", s.authed(s.chat))
	mux.HandleFunc("POST /v1/responses", s.authed(s.createResponse))
	mux.HandleFunc("GET /v1/responses", s.authed(s.listResponses))
	mux.HandleFunc("GET /v1/responses/{id}", s.authed(s.getResponse))
	mux.HandleFunc("POST /v1/responses/{id}/cancel", s.authed(s.cancelResponse))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if known(r.URL.Path) {
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error", code: "method_not_allowed",
				msg: fmt.Sprintf("%s does not answer %s; see docs/serve.md for the methods of each endpoint", r.URL.Path, r.Method)})
			return
		}
		writeError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "not_found",
			msg: fmt.Sprintf("%s %s is not an endpoint of this server; see GET /v1/models, POST /v1/chat/completions and /v1/responses", r.Method, r.URL.Path)})
	})
}

// known tells whether path is an endpoint (for 405 against 404).
func known(path string) bool {
	switch path {
	case "/health", "/v1/models", "/v1/chat/completions", "/v1/responses":
		return true
	}
	rest, ok := strings.CutPrefix(path, "/v1/responses/")
	return ok && rest != "" && strings.Count(rest, "/") <= 1
}

// caller is who made a request: the name of the key it presented ("" when
// the server runs without keys).
type caller struct{ key string }

type handler func(http.ResponseWriter, *http.Request, caller)

// authed checks the bearer key against every configured key in constant
// time (the hashes have equal length whatever the secret's), and only then
// reads the body, bounded in size and in time (readAll).
func (s *Server) authed(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		c, ok := s.authenticate(r)
		if !ok {
			s.log.Info("refused", "method", r.Method, "path", r.URL.Path, "status", http.StatusUnauthorized)
			writeError(w, &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key",
				msg: "missing or wrong API key: send the header Authorization: Bearer <key> with a key the operator gave you"})
			return
		}
		if err := s.readAll(w, r); err != nil {
			s.log.Info("refused", "method", r.Method, "path", r.URL.Path, "key", c.key, "error", err.Error())
			writeError(w, err)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h(rec, r, c)
		s.log.Info("request", "method", r.Method, "path", r.URL.Path, "key", c.key, "status", rec.status, "ms", time.Since(start).Milliseconds())
	}
}

// readAll reads the whole body under the size limit and the read deadline
// Handler set, then lifts the deadline (a stream is not bounded) and lets
// the connection be kept alive; handlers read the body from memory.
func (s *Server) readAll(w http.ResponseWriter, r *http.Request) error {
	if !hasBody(r) {
		return nil
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxRequestBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
				msg: fmt.Sprintf("the request body is over this server's limit of %d bytes; send a shorter conversation", tooBig.Limit)}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return &apiError{status: http.StatusRequestTimeout, typ: "invalid_request_error", code: "request_timeout",
				msg: fmt.Sprintf("the request body did not arrive within %s; send it at once", s.bodyTimeout())}
		}
		return badRequest("", "read the request body: %v", err)
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	w.Header().Del("Connection")
	r.Body = io.NopCloser(bytes.NewReader(data))
	return nil
}

func (s *Server) authenticate(r *http.Request) (caller, bool) {
	if len(s.keys) == 0 {
		return caller{}, true
	}
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if len(auth) > 7 && strings.EqualFold(auth[:7], "Bearer ") {
		token, ok = auth[7:], true // the scheme is case-insensitive (RFC 9110)
	}
	if !ok || token == "" {
		return caller{}, false
	}
	sum := sha256.Sum256([]byte(token))
	match := -1
	for i, k := range s.keys {
		// Every key is compared, so the time taken says nothing of which
		// (or whether one) matched.
		if subtle.ConstantTimeCompare(sum[:], k.sum[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return caller{}, false
	}
	return caller{key: s.keys[match].name}, true
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request, _ caller) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, t := range s.opts.Teams {
		list.Data = append(list.Data, model{ID: t.Name, Object: "model", OwnedBy: "conclave"})
	}
	writeJSON(w, http.StatusOK, list)
}

// statusRecorder remembers the status for the request's log line and
// passes Flush through for event streams.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// CheckListen refuses an address beyond loopback when no API key is set:
// anyone who reaches the port could otherwise spend the operator's models.
func CheckListen(addr string, haveKeys bool) error {
	if haveKeys {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: give host:port, e.g. 127.0.0.1:4000", addr)
	}
	if isLoopback(host) {
		return nil
	}
	return fmt.Errorf("--listen %s is reachable beyond this machine and no API key is set; "+
		"set CONCLAVE_API_KEYS or --api-keys-file, or listen on 127.0.0.1", addr)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkKeys refuses a bad key, two keys of one name, and one key under two
// names (its requests would be counted and recorded under either).
func checkKeys(keys []Key) error {
	names, secrets := map[string]bool{}, map[string]string{}
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return err
		}
		if names[k.Name] {
			return fmt.Errorf("two API keys are named %q; give each key its own name", k.Name)
		}
		if other, dup := secrets[k.Secret]; dup {
			return fmt.Errorf("API keys %q and %q are the same key; give each name its own key", other, k.Name)
		}
		names[k.Name], secrets[k.Secret] = true, k.Name
	}
	return nil
}

// checkKey refuses keys that are empty or too short to be secret.
func checkKey(k Key) error {
	if !validKeyName(k.Name) {
		return fmt.Errorf("API key name %q: use 1-64 letters, digits, '.', '_' or '-', written NAME:KEY", k.Name)
	}
	if len(k.Secret) < 16 {
		return fmt.Errorf("API key %q is shorter than 16 characters; use a long random key (e.g. openssl rand -hex 32)", k.Name)
	}
	return nil
}

// validKeyName: key names and model ids are search attribute values and
// log fields, so they follow the session-id rule, shorter.
func validKeyName(n string) bool {
	return len(n) <= 64 && contract.ValidSessionID(n)
}

// ParseKeys reads keys written as NAME:KEY, separated by commas or new
// lines (CONCLAVE_API_KEYS, --api-keys-file); '#' starts a comment line.
// A key without a name is named after its position (key1, key2, …).
func ParseKeys(text, source string) ([]Key, error) {
	var keys []Key
	fields := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' })
	for _, f := range fields {
		f = strings.TrimSpace(f)
		if f == "" || strings.HasPrefix(f, "#") {
			continue
		}
		name, secret, ok := strings.Cut(f, ":")
		if !ok {
			name, secret = fmt.Sprintf("key%d", len(keys)+1), f
		}
		keys = append(keys, Key{Name: strings.TrimSpace(name), Secret: strings.TrimSpace(secret)})
	}
	if err := checkKeys(keys); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return keys, nil
}

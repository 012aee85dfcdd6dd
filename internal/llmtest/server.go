// Package llmtest is a scripted OpenAI-compatible chat-completions server.
// No model is reachable from CI, so tests, the offline demo and the
// benchmarks talk to this server over real HTTP through the real client:
// every byte the production code sends and parses is exercised.
//
// A script is an ordered list of rules. Each request is matched against the
// rules in order; the first rule that matches and has uses left answers it.
// A request nothing matches gets HTTP 500 with a message naming the request,
// so a test that went off script says where.
package llmtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Server serves POST /v1/chat/completions from a script of rules. Set the
// exported fields before Start; rules may be added at any time.
type Server struct {
	// Addr is the listen address; empty means a free port on 127.0.0.1.
	Addr string
	// Latency is added to every call before it is answered (benchmarks).
	Latency time.Duration
	// ChunkRunes is the size of streamed text pieces; default 16.
	ChunkRunes int
	// SkipRecording keeps only the count of requests, so a long benchmark
	// does not grow memory.
	SkipRecording bool

	mu       sync.Mutex
	rules    []*ruleState
	requests []Request
	count    int

	httpServer *http.Server
	listener   net.Listener
}

type ruleState struct {
	Rule
	used int
}

// NewServer returns an unstarted server with the given script.
func NewServer(rules ...Rule) *Server {
	s := &Server{}
	s.Add(rules...)
	return s
}

// Start is for tests: it starts a server with the script and closes it when
// the test ends.
func Start(t testing.TB, rules ...Rule) *Server {
	t.Helper()
	s := NewServer(rules...)
	if err := s.Start(); err != nil {
		t.Fatalf("llmtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start listens on Addr and serves in the background.
func (s *Server) Start() error {
	addr := s.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.listener = ln
	s.httpServer = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.httpServer.Serve(ln) }()
	return nil
}

// URL is the base URL to give an OpenAI client; it ends in /v1.
func (s *Server) URL() string {
	if s.listener == nil {
		panic("llmtest: URL called before Start")
	}
	return "http://" + s.listener.Addr().String() + "/v1"
}

// Close stops the server and drops open connections; waiting handlers see
// their request context cancelled.
func (s *Server) Close() {
	if s.httpServer != nil {
		_ = s.httpServer.Close()
	}
}

// Add appends rules to the end of the script.
func (s *Server) Add(rules ...Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rules {
		s.rules = append(s.rules, &ruleState{Rule: r})
	}
}

// Requests returns a copy of the recorded requests in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count is the number of chat-completions requests received, matched or not.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// ServeHTTP makes the server mountable in another mux as well.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		writeError(w, Reply{Status: http.StatusNotFound, Error: fmt.Sprintf("llmtest: no route %s %s", r.Method, r.URL.Path)})
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, Reply{Status: http.StatusMethodNotAllowed, Error: "llmtest: use POST"})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	req, decodeErr := decodeRequest(body)
	req.Header = r.Header.Clone()

	reply, matched := s.match(&req, decodeErr == nil)
	if !wait(r.Context(), s.Latency) {
		return
	}
	switch {
	case decodeErr != nil:
		writeError(w, Reply{Status: http.StatusBadRequest, Error: "llmtest: " + decodeErr.Error()})
		return
	case !matched:
		writeError(w, Reply{Status: http.StatusInternalServerError, ErrorType: "llmtest_no_match",
			Error: fmt.Sprintf("llmtest: no rule matched request %d: %s", req.N, req.describe())})
		return
	}
	if !wait(r.Context(), reply.Delay) {
		return
	}
	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	switch {
	case reply.Drop:
		drop(w)
	case reply.Body != "":
		writeBody(w, reply)
	case reply.Status >= 400:
		writeError(w, reply)
	case req.Stream:
		s.writeStream(r.Context(), w, req, reply)
	default:
		writeCompletion(w, req, reply)
	}
}

// match numbers and records the request and claims a use of the first
// matching rule, all under one lock so concurrent requests see a consistent
// script. The rule's reply is computed outside the lock: a Func may be slow.
func (s *Server) match(req *Request, decoded bool) (Reply, bool) {
	s.mu.Lock()
	s.count++
	req.N = s.count
	if !s.SkipRecording {
		s.requests = append(s.requests, *req)
	}
	var found *ruleState
	if decoded {
		for _, rs := range s.rules {
			if rs.times > 0 && rs.used >= rs.times {
				continue
			}
			if rs.matches(*req) {
				rs.used++
				found = rs
				break
			}
		}
	}
	s.mu.Unlock()
	if found == nil {
		return Reply{}, false
	}
	return found.replyTo(*req), true
}

// wait sleeps for d unless ctx ends first; it reports whether to go on.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// drop closes the connection without a response, as a crashed proxy would.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // HTTP/2: abort the stream instead
	}
	_ = conn.Close()
}

// abort kills a response that has already started.
func abort() { panic(http.ErrAbortHandler) }

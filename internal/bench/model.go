package bench

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

// The team every benchmark session runs: three agents whose model names
// tell the scripted server who is calling.
var teamIDs = []string{"agent_a", "agent_b", "agent_c"}

const seqHeader = "X-Conclave-Bench-Seq"

// call is one model call as the server saw it: when it arrived and ended,
// who made it, and what it cost.
type call struct {
	agent      string
	start, end time.Time
	prompt     int64
	completion int64
	// delivered is false when the client went away before the reply (a
	// cancelled step): its prompt was paid for, its completion was not.
	delivered bool
}

// script is the agents' behaviour. An agent answers Answers times (each
// answer preceded by Work write_file calls of FileBytes each), then votes
// for agent1.
type script struct {
	Work      int
	FileBytes int
	Answers   int // default 1
	// AnswerBytes is the size of an answer (at least 400).
	AnswerBytes int
	// Latency of one model call, per agent (missing: Default).
	Latency map[string]time.Duration
	Default time.Duration
}

// model is the scripted OpenAI-compatible server with a clock: it records
// every call so a run can be split into model time and everything else.
type model struct {
	srv    *llmtest.Server
	script script
	http   *http.Server
	url    string

	mu    sync.Mutex
	seq   int
	calls map[int]*call
}

func startModel(s script) (*model, error) {
	m := &model{script: s, calls: map[int]*call{}}
	m.srv = llmtest.NewServer(llmtest.Func(m.reply))
	m.srv.SkipRecording = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("scripted model: %w", err)
	}
	m.http = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	m.url = "http://" + ln.Addr().String() + "/v1"
	go func() { _ = m.http.Serve(ln) }()
	return m, nil
}

func (m *model) close() { _ = m.http.Close() }

// ServeHTTP times the scripted server's answer.
func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.seq++
	n := m.seq
	c := &call{start: time.Now()}
	m.calls[n] = c
	m.mu.Unlock()
	r.Header.Set(seqHeader, strconv.Itoa(n))
	cw := &countingWriter{ResponseWriter: w}
	m.srv.ServeHTTP(cw, r)
	end := time.Now()
	m.mu.Lock()
	c.end, c.delivered = end, cw.n > 0
	m.mu.Unlock()
}

// countingWriter tells whether a reply was written: a call whose client
// went away during the model's latency gets none.
type countingWriter struct {
	http.ResponseWriter
	n int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (m *model) reply(r llmtest.Request) llmtest.Reply {
	agent := strings.TrimPrefix(r.Model, "m-")
	reply := m.script.decide(agent, r)
	reply.Delay = m.script.Default
	if d, ok := m.script.Latency[agent]; ok {
		reply.Delay = d
	}
	n, _ := strconv.Atoi(r.Header.Get(seqHeader))
	m.mu.Lock()
	if c := m.calls[n]; c != nil {
		c.agent, c.prompt, c.completion = agent, r.PromptTokens(), reply.CompletionTokens()
	}
	m.mu.Unlock()
	return reply
}

// decide is the agents' policy; it reads only the request, so any number
// of sessions can share one server. Answers are marked "ANS-<agent>-r<n>"
// so an agent can tell its latest revision from the context.
func (s script) decide(agent string, r llmtest.Request) llmtest.Reply {
	if len(r.Messages) > 0 && strings.Contains(r.Messages[0].Content, "present the final answer") {
		return toolCall("new_answer", map[string]string{"content": "FINAL " + strings.Repeat("f", 200)})
	}
	rev := 0 // the context shows an agent's latest answer only
	for n := 1; n <= 9; n++ {
		if r.Contains(fmt.Sprintf("ANS-%s-r%d", agent, n)) {
			rev = n
		}
	}
	if rev >= max(s.Answers, 1) {
		return toolCall("vote", map[string]string{"agent_id": "agent1", "reason": "the first answer is complete"})
	}
	writes := 0
	for _, msg := range r.Messages {
		for _, tc := range msg.ToolCalls {
			if tc.Name == "write_file" {
				writes++
			}
		}
	}
	if writes < s.Work && r.HasTool("write_file") {
		return toolCall("write_file", map[string]string{
			"path":    fmt.Sprintf("part-%d.md", writes+1),
			"content": strings.Repeat("w", s.FileBytes),
		})
	}
	return toolCall("new_answer", map[string]string{"content": fmt.Sprintf("ANS-%s-r%d %s", agent, rev+1, strings.Repeat("a", max(s.AnswerBytes, 400)))})
}

func toolCall(name string, args map[string]string) llmtest.Reply {
	b, _ := json.Marshal(args)
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: name, Arguments: string(b)}}}
}

// mark is a position in the call log.
func (m *model) mark() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seq
}

// since returns the calls after a mark, in arrival order.
func (m *model) since(mark int) []call {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []call
	for n := mark + 1; n <= m.seq; n++ {
		if c := m.calls[n]; c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// forget drops the log up to a mark, so long runs do not grow memory.
func (m *model) forget(mark int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for n := range m.calls {
		if n <= mark {
			delete(m.calls, n)
		}
	}
}

// tokenCount is what the calls cost: every prompt, and every delivered reply.
func tokenCount(calls []call) int64 {
	var t int64
	for _, c := range calls {
		t += c.prompt
		if c.delivered {
			t += c.completion
		}
	}
	return t
}

// modelTime is the time at least one of the calls was in flight: the union
// of their intervals, the least a perfect orchestrator would have to wait.
func modelTime(calls []call) time.Duration {
	type span struct{ a, b time.Time }
	spans := make([]span, 0, len(calls))
	for _, c := range calls {
		if !c.end.IsZero() {
			spans = append(spans, span{c.start, c.end})
		}
	}
	slices.SortFunc(spans, func(x, y span) int { return x.a.Compare(y.a) })
	var total time.Duration
	var cur span
	for i, s := range spans {
		switch {
		case i == 0:
			cur = s
		case !s.a.After(cur.b):
			if s.b.After(cur.b) {
				cur.b = s.b
			}
		default:
			total += cur.b.Sub(cur.a)
			cur = s
		}
	}
	if len(spans) > 0 {
		total += cur.b.Sub(cur.a)
	}
	return total
}

// agentModelTime is the model time of one agent's calls inside [from, to].
func agentModelTime(calls []call, agent string, from, to time.Time) time.Duration {
	var in []call
	for _, c := range calls {
		if c.agent != agent || c.end.IsZero() || c.end.Before(from) || c.start.After(to) {
			continue
		}
		if c.start.Before(from) {
			c.start = from
		}
		if c.end.After(to) {
			c.end = to
		}
		in = append(in, c)
	}
	return modelTime(in)
}

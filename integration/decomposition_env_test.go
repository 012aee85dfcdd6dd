//go:build integration

package integration

// Decomposition mode (coordination_mode: decomposition) end to end on a real
// Temporal dev server and MinIO, with the scripted model. Each subtest is one
// session; every session must end, its result, status.json and `conclave
// session status` on the stored session must agree, and the requests the
// scripted server received must show what docs/config.md says. These began
// as adversarial tests; the ones that found bugs (a dropped presenter still
// presenting, dropped agents shown as not started, fairness against peers
// that stopped) now guard the fixes.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

type decompEnv struct {
	minio *testenv.MinIO
	st    storage.Store
	c     client.Client
	bin   string
}

func startDecompEnv(t *testing.T) *decompEnv {
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	st, _ := s3Store(t, minio, "decomp")
	c := temporal.Client(t)
	w := worker.New(c, worker.Options{Store: st, Namespace: "default", HeartbeatEvery: time.Second})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return &decompEnv{minio: minio, st: st, c: c, bin: conclaveBinary(t)}
}

type decompRun struct {
	id      string
	res     workflows.CoordinationResult
	err     error
	srv     *llmtest.Server
	reqs    []llmtest.Request
	status  coord.Status // status.json
	hasStat bool
	cli     coord.Status // conclave session status
	cliOut  string
	cliErr  string
	cliCode int
	snap    *session.Snapshot
	folders map[string][]string // agent -> step folders
	keys    []string
}

func (p *decompRun) calls(agent string) int {
	n := 0
	for _, r := range p.reqs {
		if agentOf(r.Model) == agent {
			n++
		}
	}
	return n
}

// stepsOf returns, per agent, the requests that begin a step (no assistant
// message yet), presentation excluded.
func (p *decompRun) stepStarts(agent string) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range p.reqs {
		if agentOf(r.Model) != agent || presenting(r) {
			continue
		}
		fresh := true
		for _, m := range r.Messages {
			if m.Role == "assistant" {
				fresh = false
			}
		}
		if fresh {
			out = append(out, r)
		}
	}
	return out
}

func (p *decompRun) presentations() []llmtest.Request {
	var out []llmtest.Request
	for _, r := range p.reqs {
		if presenting(r) {
			out = append(out, r)
		}
	}
	return out
}

func (p *decompRun) dump(t *testing.T) {
	t.Helper()
	dir := os.Getenv("CONCLAVE_DECOMP_DUMP")
	if dir == "" {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "result: %+v\nerr: %v\nstatus.json: %+v\ncli(%d): %s\n%s\n", p.res, p.err, p.status, p.cliCode, p.cliOut, p.cliErr)
	for _, k := range p.keys {
		fmt.Fprintf(&b, "key %s\n", k)
	}
	for _, r := range p.reqs {
		tools := []string{}
		for _, tl := range r.Tools {
			tools = append(tools, tl.Name)
		}
		fmt.Fprintf(&b, "==== req %d model %s tools %v\n", r.N, r.Model, tools)
		for _, m := range r.Messages {
			c := m.Content
			for _, tc := range m.ToolCalls {
				c += " CALL " + tc.Name + tc.Arguments
			}
			fmt.Fprintf(&b, "-- %s: %s\n", m.Role, c)
		}
	}
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(dir+"/"+p.id+".txt", []byte(b.String()), 0o644)
}

type decompAgent struct{ id, subtask string }

func decompYAML(baseURL, orch string, agents []decompAgent) string {
	var b strings.Builder
	b.WriteString("agents:\n")
	for _, a := range agents {
		fmt.Fprintf(&b, "  - id: %s\n    backend: {type: openai, model: m-%s, base_url: %s}\n", a.id, a.id, baseURL)
		if a.subtask != "" {
			fmt.Fprintf(&b, "    subtask: %q\n", a.subtask)
		}
	}
	b.WriteString("orchestrator:\n  orchestrator_timeout_seconds: 240\n")
	for _, l := range strings.Split(strings.TrimSpace(orch), "\n") {
		if strings.TrimSpace(l) != "" {
			b.WriteString("  " + strings.TrimSpace(l) + "\n")
		}
	}
	return b.String()
}

func subtasks(ids ...string) []decompAgent {
	var out []decompAgent
	for _, id := range ids {
		out = append(out, decompAgent{id: id, subtask: "SUBTASK-" + id + ": write the " + id + " section"})
	}
	return out
}

// run runs one session and gathers everything the assertions need. The
// session must end within limit.
func (e *decompEnv) run(t *testing.T, id string, cfgYAML string, fn func(llmtest.Request) llmtest.Reply, srvSet func(*llmtest.Server)) *decompRun {
	t.Helper()
	srv := llmtest.Start(t, llmtest.Func(fn))
	if srvSet != nil {
		srvSet(srv)
	}
	yml := strings.ReplaceAll(cfgYAML, "BASEURL", srv.URL())
	cfg, err := config.Parse([]byte(yml), "team.yaml")
	require.NoError(t, err, yml)
	ctx := context.Background()
	p := &decompRun{id: id, srv: srv, folders: map[string][]string{}}
	wr, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "Build a small website about the Beatles.", Config: *cfg})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	p.err = wr.Get(wctx, &p.res)
	if wctx.Err() != nil {
		_ = e.c.TerminateWorkflow(ctx, id, "", "the session did not end")
		p.reqs = srv.Requests()
		p.dump(t)
		t.Fatalf("HANG: session %s did not end within 150s; %d model calls", id, len(p.reqs))
	}
	// status.json is written by a background coroutine, last write before the end.
	sub := subStore(e.st, id)
	if err := session.ReadJSON(ctx, sub, "status.json", &p.status); err == nil {
		p.hasStat = true
	}
	p.cliOut, p.cliErr, p.cliCode = runBin(t, e.bin, "session", "status", "--session-dir", e.minio.URL("conclave", "decomp/"+id))
	_ = json.Unmarshal([]byte(p.cliOut), &p.cli)
	p.snap, _ = session.Load(ctx, sub)
	p.keys, _ = sub.List(ctx, "")
	re := regexp.MustCompile(`^agents/([^/]+)/(\d{3})/`)
	seen := map[string]bool{}
	for _, k := range p.keys {
		if m := re.FindStringSubmatch(k); m != nil && !seen[m[1]+m[2]] {
			seen[m[1]+m[2]] = true
			p.folders[m[1]] = append(p.folders[m[1]], m[2])
		}
	}
	for _, f := range p.folders {
		sort.Strings(f)
	}
	p.reqs = srv.Requests()
	p.dump(t)
	t.Logf("%s: err=%v status=%s winner=%s failed=%v calls=%d folders=%v", id, p.err, p.res.Status, p.res.Winner, p.res.FailedAgents, len(p.reqs), p.folders)
	t.Logf("status.json: phase=%s winner=%s decided_by=%s consensus=%v; cli(%d): phase=%s winner=%s decided_by=%s relaunch=%v stderr=%s",
		p.status.Phase, p.status.Winner, p.status.DecidedBy, p.status.Consensus, p.cliCode, p.cli.Phase, p.cli.Winner, p.cli.DecidedBy, p.cli.Relaunch, strings.TrimSpace(p.cliErr))
	return p
}

// agree checks result, status.json and session status agree on a successful session.
func (p *decompRun) agree(t *testing.T) {
	t.Helper()
	require.NoError(t, p.err)
	require.True(t, p.hasStat, "status.json stored")
	assert.Equal(t, "done", p.status.Phase, "status.json phase")
	assert.Equal(t, p.res.Winner, p.status.Winner, "status.json winner")
	assert.Equal(t, 0, p.cliCode, p.cliErr)
	assert.Equal(t, "done", p.cli.Phase, "session status phase: %s", p.cliOut)
	assert.Equal(t, p.res.Winner, p.cli.Winner, "session status winner: %s", p.cliOut)
	assert.Empty(t, p.cli.Relaunch, "session status relaunch")
	wantDecided := "consensus"
	if p.res.Status == coord.StatusPlurality {
		wantDecided = "plurality"
	}
	assert.Equal(t, wantDecided, p.status.DecidedBy, "status.json decided_by vs result status %s", p.res.Status)
	assert.Equal(t, wantDecided, p.cli.DecidedBy, "session status decided_by vs result status %s", p.res.Status)
	for a, as := range p.cli.Agents {
		assert.False(t, as.Running, "%s shown running after the end", a)
	}
	// An agent the workflow dropped is "failed" in both.
	for a, as := range p.status.Agents {
		assert.Equal(t, as.State, p.cli.Agents[a].State, "%s: status.json state vs session status state", a)
	}
}

func stopCall(summary, status string) llmtest.Reply {
	return call("stop", map[string]string{"summary": summary, "status": status})
}

func part(agent string) string { return "PART-" + agent + " the " + agent + " section of the site" }

// partsIn lists the parts a request shows.
func partsIn(r llmtest.Request, ids ...string) []string {
	var out []string
	for _, id := range ids {
		if r.Contains("PART-" + id) {
			out = append(out, id)
		}
	}
	return out
}

// firstAnswerReq: requests of agent that come before its first accepted new_answer
// (by arrival), as judged by the reply the script gave. We record it in the script.
type callLog struct {
	mu        sync.Mutex
	answeredN map[string]int // agent -> N of the request whose reply was its first new_answer
}

func newCallLog() *callLog { return &callLog{answeredN: map[string]int{}} }

func (l *callLog) answered(agent string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.answeredN[agent]; !ok {
		l.answeredN[agent] = n
	}
}

func (l *callLog) first(agent string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.answeredN[agent]; ok {
		return n
	}
	return 1 << 30
}

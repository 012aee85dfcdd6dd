//go:build integration

package integration

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// presentMark is in the presenter's system message only.
const presentMark = "present the final answer"

// modelCall is one request the fault model received.
type modelCall struct {
	N     int
	At    time.Time
	Agent string
	// FP identifies the conversation so far (see fingerprint): two calls
	// with the same FP asked the model exactly the same thing.
	FP string
	// Fault is the failure the script answered with, if any.
	Fault string
}

// faultModel is the scripted model of the fault tests: every agent writes
// notes, answers, then votes for agent1 (agent_a) once it sees agent_a's
// answer (for itself before that, a vote that goes stale); the presenter
// presents. Every reply waits a random delay so faults land mid-call, and
// every request is recorded with its arrival time.
type faultModel struct {
	minDelay, maxDelay time.Duration
	// fault, when set, may answer a request with a failure instead.
	fault func(r llmtest.Request, fp string) (llmtest.Reply, string, bool)

	mu    sync.Mutex
	rng   *rand.Rand
	calls []modelCall
}

func newFaultModel(seed int64, minDelay, maxDelay time.Duration) *faultModel {
	return &faultModel{minDelay: minDelay, maxDelay: maxDelay, rng: rand.New(rand.NewPCG(uint64(seed), 0x6d6f64656c))}
}

// rule is the script as an llmtest rule.
func (m *faultModel) rule() llmtest.Rule { return llmtest.Func(m.reply) }

func (m *faultModel) reply(r llmtest.Request) llmtest.Reply {
	agent := agentOf(r.Model)
	fp := fingerprint(agent, requestMessages(r))
	m.mu.Lock()
	delay := m.minDelay
	if m.maxDelay > m.minDelay {
		delay += time.Duration(m.rng.Int64N(int64(m.maxDelay - m.minDelay)))
	}
	m.mu.Unlock()
	c := modelCall{N: r.N, At: time.Now(), Agent: agent, FP: fp}
	reply, kind, failed := llmtest.Reply{}, "", false
	if m.fault != nil {
		reply, kind, failed = m.fault(r, fp)
	}
	if !failed {
		reply = script(r)
	}
	c.Fault = kind
	reply.Delay = delay
	m.mu.Lock()
	m.calls = append(m.calls, c)
	m.mu.Unlock()
	return reply
}

// Calls returns the recorded requests in arrival order.
func (m *faultModel) Calls() []modelCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelCall(nil), m.calls...)
}

func answerMark(agent string) string { return "ANSWER-" + agent }

// script is the happy path of the fault model.
func script(r llmtest.Request) llmtest.Reply {
	agent := agentOf(r.Model)
	answered := r.Contains(answerMark(agent))
	switch {
	case strings.Contains(r.Messages[0].Content, presentMark):
		return call("new_answer", map[string]string{"content": "FINAL: durable execution, by " + agent})
	case !answered && !hasToolResult(r):
		return call("write_file", map[string]string{"path": "notes.md", "content": "# notes of " + agent})
	case !answered:
		return call("new_answer", map[string]string{"content": answerMark(agent) + ": durable execution survives crashes."})
	case r.Contains(answerMark("agent_a")):
		return call("vote", map[string]string{"agent_id": "agent1", "reason": "agent_a's answer is complete"})
	default:
		// agent_a's answer is not out yet: vote for our own (agents sorted
		// by id are agent1…agent3), a vote that goes stale once it appears.
		self := map[string]string{"agent_a": "agent1", "agent_b": "agent2", "agent_c": "agent3"}[agent]
		return call("vote", map[string]string{"agent_id": self, "reason": "the only answer I know"})
	}
}

func hasToolResult(r llmtest.Request) bool {
	for _, m := range r.Messages {
		if m.Role == "tool" {
			return true
		}
	}
	return false
}

// requestMessages converts what went over the wire into the engine's
// message type, the form stored in checkpoints.
func requestMessages(r llmtest.Request) []llm.Message {
	out := make([]llm.Message, len(r.Messages))
	for i, m := range r.Messages {
		out[i] = llm.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
	}
	return out
}

// fingerprint identifies a model call by the agent and every message sent.
// Sessions differ by task, steps by the answers shown. A presentation is
// keyed without the agent, as its checkpoint (final/trace.jsonl) does not
// name the presenter; a session has one presenter.
func fingerprint(agent string, msgs []llm.Message) string {
	if len(msgs) > 0 && strings.Contains(msgs[0].Content, presentMark) {
		agent = ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%q\n", agent)
	for _, m := range msgs {
		fmt.Fprintf(h, "%q %q %q %q\n", m.Role, m.Name, m.Content, m.ToolCallID)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(h, "call %q %q %q\n", c.ID, c.Name, c.Arguments)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Fault kinds of TestFaultFlakyModel.
const (
	fault429  = "429"
	fault500  = "500"
	faultDrop = "drop"
)

// TestFaultFlakyModel runs five sessions against a model endpoint that
// fails about one call in five — rate limits (Retry-After 0 or 1), server
// errors and dropped connections — and requires every session to reach
// consensus with all three agents voting: no transient failure may fail an
// agent. The choice of failures is a function of the seed and of each
// request's content, so CONCLAVE_FAULT_SEED replays it.
func TestFaultFlakyModel(t *testing.T) {
	seed := faultSeed(t)
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	st, _ := s3Store(t, minio, "flaky")

	model := newFaultModel(seed, 20*time.Millisecond, 80*time.Millisecond)
	var mu sync.Mutex
	seen := map[string]int{}      // fingerprint → requests so far
	forced := map[string]string{} // agent → the fault forced on its first call in session 0
	model.fault = func(r llmtest.Request, fp string) (llmtest.Reply, string, bool) {
		mu.Lock()
		defer mu.Unlock()
		nth := seen[fp]
		seen[fp]++
		agent := agentOf(r.Model)
		var kind string
		// Each kind is certain to happen at least once: the first call of
		// each agent of session 0 gets one.
		if _, done := forced[agent]; !done && r.Contains("Flaky session 0:") {
			kind = map[string]string{"agent_a": fault429, "agent_b": fault500, "agent_c": faultDrop}[agent]
			forced[agent] = kind
		} else {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], uint64(seed))
			h := sha256.Sum256(fmt.Appendf(b[:], "%s/%d", fp, nth))
			if v := binary.LittleEndian.Uint64(h[:8]); v%100 < 20 {
				kind = []string{fault429, fault500, faultDrop}[(v/100)%3]
			}
		}
		switch kind {
		case fault429:
			retryAfter := []string{"0", "1"}[nth%2]
			return llmtest.Reply{Status: http.StatusTooManyRequests, Error: "rate limit reached, slow down",
				Header: http.Header{"Retry-After": {retryAfter}}}, kind, true
		case fault500:
			return llmtest.Reply{Status: http.StatusInternalServerError, Error: "the server had an error"}, kind, true
		case faultDrop:
			return llmtest.Reply{Drop: true}, kind, true
		}
		return llmtest.Reply{}, "", false
	}
	srv := llmtest.Start(t, model.rule())
	c := temporal.Client(t)
	w := worker.New(c, worker.Options{Store: st, Namespace: "default", HeartbeatEvery: time.Second})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	cfg := team(t, srv.URL(), "agent_a", "agent_b", "agent_c")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	begin := time.Now()
	runs := startSessions(ctx, t, c, cfg, sessionSpec{prefix: "flaky", task: "Flaky session %d: explain durable execution.", n: 5})
	<-runs.done
	t.Logf("5 sessions in %s", time.Since(begin).Round(time.Millisecond))

	runs.requireConsensus(t)
	for _, id := range runs.ids {
		requireNoDuplicateSteps(t, subStore(st, id))
		requireHistoryKeysStored(t, c, subStore(st, id), id)
	}
	kinds := map[string]int{}
	calls := model.Calls()
	for _, call := range calls {
		if call.Fault != "" {
			kinds[call.Fault]++
		}
	}
	t.Logf("%d model calls, failures injected: %v", len(calls), kinds)
	for _, k := range []string{fault429, fault500, faultDrop} {
		require.Positive(t, kinds[k], "no %s was injected; the test proved nothing about it", k)
	}
}

// TestFaultBadKeyFailsFast gives every agent an API key the endpoint
// rejects (401). A rejected key is not transient: each agent's step must
// fail on its first attempt, so the session fails within seconds, and the
// error the caller gets and the failure the Web UI shows (the workflow
// history) must both say that the key in the named variable was rejected,
// never the key itself.
func TestFaultBadKeyFailsFast(t *testing.T) {
	const envName = "FAULT_TEST_KEY"
	const key = "sk-fault-test-rejected-key"
	t.Setenv(envName, key) // before the worker starts: it reads its own environment
	t.Setenv("CONCLAVE_ALLOW_KEY_ENV", envName)
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	_, url := s3Store(t, minio, "badkey")
	srv := llmtest.Start(t, llmtest.Fail(http.StatusUnauthorized, "Incorrect API key provided"))
	c := temporal.Client(t)
	startWorker(t, bin, temporal.HostPort, url)

	cfg := team(t, srv.URL(), "agent_a", "agent_b", "agent_c")
	for i := range cfg.Agents {
		cfg.Agents[i].Backend.APIKeyEnv = envName
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const id = "badkey-1"
	begin := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "Say something durable.", Config: cfg})
	require.NoError(t, err)
	var res workflows.CoordinationResult
	err = run.Get(ctx, &res)
	took := time.Since(begin)
	t.Logf("the session failed after %s: %v", took.Round(time.Millisecond), err)

	want := "the API key in $" + envName + " was rejected (401): check the key"
	require.Error(t, err)
	require.Contains(t, err.Error(), want)
	require.NotContains(t, err.Error(), key)
	require.Less(t, took, 30*time.Second, "a rejected key must fail the session at once, not after retries")

	// No retries: one call per agent, each carrying the key.
	reqs := srv.Requests()
	require.Len(t, reqs, 3, "a 401 was retried")
	for _, r := range reqs {
		require.Equal(t, "Bearer "+key, r.Header.Get("Authorization"))
	}

	iter := c.GetWorkflowHistory(ctx, id, "", false, 0)
	activityFailures := 0
	workflowFailure := ""
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskFailedEventAttributes(); a != nil {
			activityFailures++
			require.Equal(t, want, a.GetFailure().GetMessage())
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			require.EqualValues(t, 1, a.GetAttempt(), "an activity was retried after a 401")
		}
		if a := ev.GetWorkflowExecutionFailedEventAttributes(); a != nil {
			workflowFailure = a.GetFailure().GetMessage()
		}
	}
	require.Equal(t, 3, activityFailures, "every agent's step fails, and only once")
	require.Contains(t, workflowFailure, want, "the Web UI shows the workflow's failure message")
	require.NotContains(t, workflowFailure, key)
}

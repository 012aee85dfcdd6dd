//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// faultSeed is the seed of a fault test's random choices:
// $CONCLAVE_FAULT_SEED when set, else the clock. It is logged so that a
// failure can be replayed (as far as the machine's timing allows).
func faultSeed(t *testing.T) int64 {
	t.Helper()
	seed := time.Now().UnixNano()
	if v := os.Getenv("CONCLAVE_FAULT_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "CONCLAVE_FAULT_SEED must be an integer")
		seed = n
	}
	t.Logf("fault seed %d (replay with CONCLAVE_FAULT_SEED=%d)", seed, seed)
	return seed
}

// sessionRuns are concurrently running sessions and, once done is closed,
// their outcomes.
type sessionRuns struct {
	ids     []string
	results []workflows.CoordinationResult
	errs    []error
	done    chan struct{}
}

// sessionSpec says which sessions to run: <prefix>-00, <prefix>-01, … with
// the config's three agents, whose tasks differ (task is a format for the
// session's number).
type sessionSpec struct {
	prefix, task     string
	n                int
	heartbeatSeconds int
}

func (sp sessionSpec) id(i int) string { return fmt.Sprintf("%s-%02d", sp.prefix, i) }

func (sp sessionSpec) start(ctx context.Context, c client.Client, cfg config.Config, i int) (client.WorkflowRun, error) {
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: sp.id(i), TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: fmt.Sprintf(sp.task, i), Config: cfg, StepHeartbeatSeconds: sp.heartbeatSeconds})
}

func newSessionRuns(sp sessionSpec) *sessionRuns {
	s := &sessionRuns{results: make([]workflows.CoordinationResult, sp.n), errs: make([]error, sp.n), done: make(chan struct{})}
	for i := range sp.n {
		s.ids = append(s.ids, sp.id(i))
	}
	return s
}

// track runs session i's wait in the background; done closes when all
// have returned.
func (s *sessionRuns) track(wait func(i int) error) {
	var wg sync.WaitGroup
	for i := range s.ids {
		wg.Go(func() { s.errs[i] = wait(i) })
	}
	go func() { wg.Wait(); close(s.done) }()
}

// startSessions starts every session now and waits for them in the
// background until they end or ctx does.
func startSessions(ctx context.Context, t *testing.T, c client.Client, cfg config.Config, sp sessionSpec) *sessionRuns {
	t.Helper()
	s := newSessionRuns(sp)
	runs := make([]client.WorkflowRun, sp.n)
	for i := range sp.n {
		run, err := sp.start(ctx, c, cfg, i)
		require.NoError(t, err)
		runs[i] = run
	}
	s.track(func(i int) error { return runs[i].Get(ctx, &s.results[i]) })
	return s
}

// startStaggered starts session i after i×every, in the background, so
// faults meet sessions in every phase.
func startStaggered(ctx context.Context, c client.Client, cfg config.Config, sp sessionSpec, every time.Duration) *sessionRuns {
	s := newSessionRuns(sp)
	s.track(func(i int) error {
		select {
		case <-time.After(time.Duration(i) * every):
		case <-ctx.Done():
			return ctx.Err()
		}
		run, err := sp.start(ctx, c, cfg, i)
		if err != nil {
			return fmt.Errorf("start the session: %w", err)
		}
		return run.Get(ctx, &s.results[i])
	})
	return s
}

// requireConsensus checks every session ended in consensus on agent_a's
// answer with all three votes, and presented by the model (a failed
// presentation would fall back to the stored answer).
func (s *sessionRuns) requireConsensus(t *testing.T) {
	t.Helper()
	for i, id := range s.ids {
		require.NoError(t, s.errs[i], "session %s", id)
		res := s.results[i]
		require.Equal(t, coord.StatusConsensus, res.Status, id)
		require.Equal(t, "agent_a", res.Winner, id)
		require.Equal(t, map[string]int{"agent_a": 3}, res.Votes, "%s: every agent stayed alive and voted", id)
		require.Equal(t, "FINAL: durable execution, by agent_a", res.FinalAnswer, id)
	}
}

// retriedActivities counts the activities of a session that needed more
// than one attempt, and tells the most attempts one needed.
func retriedActivities(t *testing.T, c client.Client, id string) (retried, maxAttempt int) {
	t.Helper()
	iter := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			if a.GetAttempt() > 1 {
				retried++
			}
			maxAttempt = max(maxAttempt, int(a.GetAttempt()))
		}
	}
	return retried, maxAttempt
}

// pendingReport describes what the sessions that are still running wait
// for, to explain a session that did not recover.
func pendingReport(t *testing.T, c client.Client, ids []string, since time.Time) string {
	t.Helper()
	var b strings.Builder
	for _, id := range ids {
		d, err := c.DescribeWorkflowExecution(context.Background(), id, "")
		require.NoError(t, err)
		if d.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			continue
		}
		fmt.Fprintf(&b, "%s is still running:\n", id)
		for _, a := range d.GetPendingActivities() {
			fmt.Fprintf(&b, "  activity %s (id %s) attempt %d, %s, last started at %s (the last kill was at %s), last failure %q\n",
				a.GetActivityType().GetName(), a.GetActivityId(), a.GetAttempt(), a.GetState(),
				a.GetLastStartedTime().AsTime().Local().Format(time.StampMilli), since.Format(time.StampMilli), a.GetLastFailure().GetMessage())
		}
		if wt := d.GetPendingWorkflowTask(); wt != nil {
			fmt.Fprintf(&b, "  workflow task %s, attempt %d\n", wt.GetState(), wt.GetAttempt())
		}
	}
	return b.String()
}

// checkpointLog is a reverse proxy between the worker and MinIO. It records
// every trace.jsonl — a step's transcript, which is its checkpoint — that
// MinIO acknowledged, with its content and when, and when each was read.
// That tells a model call whose reply was stored from one whose reply never
// reached storage, which only the second may be made again.
type checkpointLog struct {
	srv    *httptest.Server
	mu     sync.Mutex
	stored []storedCheckpoint
	reads  map[string][]time.Time // path → when a GET of it began
}

type storedCheckpoint struct {
	path string
	at   time.Time // after MinIO acknowledged it
	body []byte
}

func startCheckpointLog(t *testing.T, minioEndpoint string) *checkpointLog {
	t.Helper()
	target, err := url.Parse(minioEndpoint)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // killed workers abort requests
	l := &checkpointLog{reads: map[string][]time.Time{}}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/trace.jsonl") {
			proxy.ServeHTTP(w, r)
			return
		}
		switch r.Method {
		case http.MethodGet:
			l.mu.Lock()
			l.reads[r.URL.Path] = append(l.reads[r.URL.Path], time.Now())
			l.mu.Unlock()
			proxy.ServeHTTP(w, r)
		case http.MethodPut:
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return // the worker died mid-upload
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			sw := &statusRecorder{ResponseWriter: w}
			proxy.ServeHTTP(sw, r)
			if sw.status/100 == 2 {
				l.mu.Lock()
				l.stored = append(l.stored, storedCheckpoint{path: r.URL.Path, at: time.Now(), body: body})
				l.mu.Unlock()
			}
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(l.srv.Close)
	return l
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// storageURL is the s3:// location of bucket/prefix reached through the log.
func (l *checkpointLog) storageURL(m *testenv.MinIO, bucket, prefix string) string {
	viaLog := *m
	viaLog.Endpoint = l.srv.URL
	return viaLog.URL(bucket, prefix)
}

// completedCall is the evidence that a model call's reply was stored.
type completedCall struct {
	path string
	at   time.Time
}

// completed maps the fingerprint of every model call whose reply is in an
// acknowledged checkpoint to where and when such checkpoints were stored.
func (l *checkpointLog) completed(t *testing.T) map[string][]completedCall {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]completedCall{}
	for _, s := range l.stored {
		tr, err := agent.ParseTranscript[round.State](s.body)
		require.NoError(t, err, "stored checkpoint %s", s.path)
		agent := "" // final/trace.jsonl: the presentation
		if parts := strings.Split(s.path, "/"); slices.Contains(parts, "agents") {
			agent = parts[slices.Index(parts, "agents")+1]
		}
		for i, m := range tr.Messages {
			if m.Role == "assistant" {
				fp := fingerprint(agent, tr.Messages[:i])
				out[fp] = append(out[fp], completedCall{path: s.path, at: s.at})
			}
		}
	}
	return out
}

// readBetween reports whether path was read after from and before to.
func (l *checkpointLog) readBetween(path string, from, to time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, at := range l.reads[path] {
		if at.After(from) && at.Before(to) {
			return true
		}
	}
	return false
}

// requireNoCompletedCallRepeated fails if the model was asked something
// again after a checkpoint holding its reply had been stored and then read
// back: the step that read it had the reply and must not have paid for it
// twice. A call repeated because its reply never reached storage (the
// worker died first) is allowed. It returns how many calls were repeats.
func requireNoCompletedCallRepeated(t *testing.T, calls []modelCall, l *checkpointLog) int {
	t.Helper()
	done := l.completed(t)
	require.NotEmpty(t, done, "no checkpoint went through the log; the check would prove nothing")
	seen := map[string]bool{}
	repeats := 0
	for _, c := range calls {
		if seen[c.FP] {
			repeats++
		}
		seen[c.FP] = true
		for _, d := range done[c.FP] {
			if d.at.Before(c.At) && l.readBetween(d.path, d.at, c.At) {
				t.Errorf("model call %d of %s repeats a call whose reply was stored in %s at %s and read back before this call at %s",
					c.N, c.Agent, d.path, d.at.Format(time.StampMicro), c.At.Format(time.StampMicro))
				break
			}
		}
	}
	return repeats
}

// kill is one SIGKILL of the worker and its replacement.
type kill struct{ at, restarted time.Time }

// repeatsByCause splits the repeated model calls into those made after a
// kill that followed the first one (the reply died with the worker) and the
// others, which an attempt that missed its heartbeat timeout on a busy
// worker and ran on beside its retry can explain. A request a worker wrote
// just before dying can be handled a moment after the kill, hence the slack.
func repeatsByCause(calls []modelCall, kills []kill) (afterKill, other int) {
	const slack = time.Second
	first := map[string]time.Time{}
	for _, c := range calls {
		at, ok := first[c.FP]
		if !ok {
			first[c.FP] = c.At
			continue
		}
		if slices.ContainsFunc(kills, func(k kill) bool { return at.Before(k.at.Add(slack)) && k.restarted.Before(c.At) }) {
			afterKill++
		} else {
			other++
		}
	}
	return afterKill, other
}

// killScenario sizes a random-kill run.
type killScenario struct {
	sessions, kills int
	// startEvery staggers the sessions' starts.
	startEvery time.Duration
	// gaps between a restart and the next kill are drawn from [minGap, maxGap).
	minGap, maxGap time.Duration
	// recovery bounds how long sessions may run on after the last kill.
	recovery time.Duration
	timeout  time.Duration
}

// TestFaultRandomWorkerKills runs 20 three-agent sessions (started 0.3s
// apart) on one worker process and SIGKILLs it — its whole process group —
// at five random moments, starting a new one each time; model calls take
// 150–300ms, so kills land mid-call. Every session must reach consensus
// with all three votes within a minute of the last kill, every step's files
// must be stored once, every result in history must point at a stored
// file, and no model call whose reply had been checkpointed may be made
// again.
func TestFaultRandomWorkerKills(t *testing.T) {
	runRandomKills(t, killScenario{sessions: 20, kills: 5, startEvery: 300 * time.Millisecond,
		minGap: 1500 * time.Millisecond, maxGap: 4 * time.Second, recovery: time.Minute, timeout: 3 * time.Minute})
}

// TestFaultRandomWorkerKillsSoak is the same with 100 sessions (0.5s apart)
// and 20 kills. It takes over a minute and keeps a small machine busy, so it
// runs only with CONCLAVE_SOAK=1.
func TestFaultRandomWorkerKillsSoak(t *testing.T) {
	if os.Getenv("CONCLAVE_SOAK") != "1" {
		t.Skip("set CONCLAVE_SOAK=1 to run the soak")
	}
	runRandomKills(t, killScenario{sessions: 100, kills: 20, startEvery: 500 * time.Millisecond,
		minGap: time.Second, maxGap: 3500 * time.Millisecond, recovery: 90 * time.Second, timeout: 15 * time.Minute})
}

func runRandomKills(t *testing.T, sc killScenario) {
	seed := faultSeed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6b696c6c))
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	st, _ := s3Store(t, minio, "kills")
	cplog := startCheckpointLog(t, minio.Endpoint)
	workerURL := cplog.storageURL(minio, "conclave", "kills")
	model := newFaultModel(seed, 150*time.Millisecond, 300*time.Millisecond)
	srv := llmtest.Start(t, model.rule())
	c := temporal.Client(t)
	w := startWorker(t, bin, temporal.HostPort, workerURL)

	cfg := team(t, srv.URL(), "agent_a", "agent_b", "agent_c")
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), sc.timeout)
	defer cancel()
	runs := startStaggered(ctx, c, cfg, sessionSpec{prefix: "kills", task: "Kill session %d: explain durable execution.",
		n: sc.sessions, heartbeatSeconds: 3}, sc.startEvery)

	var kills []kill
	for len(kills) < sc.kills {
		gap := sc.minGap + time.Duration(rng.Int64N(int64(sc.maxGap-sc.minGap)))
		select {
		case <-runs.done:
		case <-time.After(gap):
		}
		if isClosed(runs.done) {
			break
		}
		k := kill{at: time.Now()}
		require.NoError(t, syscall.Kill(-w.Process.Pid, syscall.SIGKILL))
		_ = w.Wait()
		w = startWorker(t, bin, temporal.HostPort, workerURL)
		k.restarted = time.Now()
		kills = append(kills, k)
		t.Logf("kill %d at +%s", len(kills), k.at.Sub(begin).Round(time.Millisecond))
	}
	// A kill costs an agent step its heartbeat timeout and a workflow task
	// its timeout (10s) before they run again; beyond that nothing may wait
	// on a dead worker.
	lastKill := begin
	if len(kills) > 0 {
		lastKill = kills[len(kills)-1].at
	}
	select {
	case <-runs.done:
	case <-time.After(time.Until(lastKill.Add(sc.recovery))):
		t.Fatalf("sessions still running %s after the last kill; an activity of a killed worker is retried only "+
			"after its heartbeat or start-to-close timeout, which must be short:\n%s",
			sc.recovery, pendingReport(t, c, runs.ids, lastKill))
	}
	t.Logf("%d sessions, %d kills, done after %s", sc.sessions, len(kills), time.Since(begin).Round(time.Millisecond))

	runs.requireConsensus(t)
	require.Len(t, kills, sc.kills, "the sessions ended before every kill; they no longer run long enough to test anything")
	retried := 0
	for _, id := range runs.ids {
		requireNoDuplicateSteps(t, subStore(st, id))
		requireHistoryKeysStored(t, c, subStore(st, id), id)
		n, _ := retriedActivities(t, c, id)
		retried += n
	}
	calls := model.Calls()
	repeats := requireNoCompletedCallRepeated(t, calls, cplog)
	afterKill, other := repeatsByCause(calls, kills)
	t.Logf("%d model calls; %d repeated, none with a stored reply: %d after a kill, %d beside a retry after a missed heartbeat; %d activities retried",
		len(calls), repeats, afterKill, other, retried)
	require.Positive(t, retried, "no kill interrupted an activity")
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// awaitCalls waits until the model has received at least n requests.
func awaitCalls(t *testing.T, srv *llmtest.Server, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return srv.Count() >= n }, time.Minute, 20*time.Millisecond,
		"the model never got %d requests", n)
}

// requireAllRunning checks that no session has ended yet, so a fault
// injected now lands mid-run.
func requireAllRunning(t *testing.T, c client.Client, runs *sessionRuns) {
	t.Helper()
	for _, id := range runs.ids {
		d, err := c.DescribeWorkflowExecution(context.Background(), id, "")
		require.NoError(t, err)
		require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus(),
			"%s already ended; the fault would not land mid-run", id)
	}
}

// TestFaultTemporalRestart restarts the Temporal server (same ports, same
// SQLite file) while three sessions are mid-run on a worker in its own
// process. The worker and the client reconnect; every session completes
// with consensus, nothing is stored twice, and no checkpointed model call
// is repeated.
func TestFaultTemporalRestart(t *testing.T) {
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t, testenv.WithDBFile(filepath.Join(t.TempDir(), "temporal.db")))
	minio := testenv.StartMinIO(t)
	st, _ := s3Store(t, minio, "restart")
	cplog := startCheckpointLog(t, minio.Endpoint)
	model := newFaultModel(faultSeed(t), 300*time.Millisecond, 600*time.Millisecond)
	srv := llmtest.Start(t, model.rule())
	c := temporal.Client(t)
	startWorker(t, bin, temporal.HostPort, cplog.storageURL(minio, "conclave", "restart"))

	cfg := team(t, srv.URL(), "agent_a", "agent_b", "agent_c")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runs := startSessions(ctx, t, c, cfg, sessionSpec{prefix: "restart", task: "Restart session %d: explain durable execution.",
		n: 3, heartbeatSeconds: 5})

	awaitCalls(t, srv, 9) // the sessions are under way
	requireAllRunning(t, c, runs)
	before := srv.Count()
	began := time.Now()
	temporal.Restart(t)
	t.Logf("Temporal restarted in %s, after %d model calls", time.Since(began).Round(time.Millisecond), before)
	<-runs.done

	runs.requireConsensus(t)
	require.Greater(t, srv.Count(), before, "no model call after the restart: the sessions did not go on")
	for _, id := range runs.ids {
		requireNoDuplicateSteps(t, subStore(st, id))
		requireHistoryKeysStored(t, c, subStore(st, id), id)
	}
	repeats := requireNoCompletedCallRepeated(t, model.Calls(), cplog)
	t.Logf("%d model calls, %d repeated", srv.Count(), repeats)
}

// TestFaultMinIODown stops MinIO for 20 seconds while three sessions are
// mid-run, with model calls slow enough that steps want to store their
// checkpoints during the outage, then starts it again on the same port and
// data. Storage errors are retried: every session completes with consensus
// and nothing is stored twice.
func TestFaultMinIODown(t *testing.T) {
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	st, storageURL := s3Store(t, minio, "outage")
	model := newFaultModel(faultSeed(t), 400*time.Millisecond, 800*time.Millisecond)
	srv := llmtest.Start(t, model.rule())
	c := temporal.Client(t)
	startWorker(t, bin, temporal.HostPort, storageURL)

	cfg := team(t, srv.URL(), "agent_a", "agent_b", "agent_c")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runs := startSessions(ctx, t, c, cfg, sessionSpec{prefix: "outage", task: "Outage session %d: explain durable execution.",
		n: 3, heartbeatSeconds: 5})

	awaitCalls(t, srv, 9)
	requireAllRunning(t, c, runs)
	minio.Stop()
	down := time.Now()
	calls := srv.Count()
	const outage = 20 * time.Second
	select {
	case <-runs.done:
		t.Fatalf("the sessions ended while storage was down: %v", runs.errs)
	case <-time.After(outage):
	}
	minio.Start(t)
	t.Logf("MinIO was down for %s; %d model calls before, %d during", time.Since(down).Round(time.Millisecond), calls, srv.Count()-calls)
	<-runs.done

	runs.requireConsensus(t)
	retried, most := 0, 0
	for _, id := range runs.ids {
		requireNoDuplicateSteps(t, subStore(st, id))
		requireHistoryKeysStored(t, c, subStore(st, id), id)
		n, m := retriedActivities(t, c, id)
		retried, most = retried+n, max(most, m)
	}
	t.Logf("%d activities retried, the most attempts one needed: %d", retried, most)
	require.Positive(t, retried, "no activity met the outage")
}

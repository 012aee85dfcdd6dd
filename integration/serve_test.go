//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/serve"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// serveEnv is `conclave serve`'s world: a dev server, MinIO, a worker and
// the scripted model. The team of two agents answers, votes for agent1
// (agent_a), and its presenter says "FINAL ANSWER"; a task with SLOW (or
// VERYSLOW) in it makes every model call take a while, so a test can act
// mid-run.
type serveEnv struct {
	temporal *testenv.Temporal
	c        client.Client
	model    *llmtest.Server
	teamYAML string
}

const (
	keyAlice = "alice:sk-alice-0123456789abcdef"
	keyBob   = "bob:sk-bob-0123456789abcdef00"
)

func secretOf(k string) string { _, s, _ := strings.Cut(k, ":"); return s }

func startServeEnv(t testing.TB) *serveEnv {
	t.Helper()
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	model := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		var rep llmtest.Reply
		switch {
		case strings.Contains(r.Messages[0].Content, "present the final answer"):
			rep = call("new_answer", map[string]string{"content": "FINAL ANSWER from the team"})
		case r.HasTool("vote") && r.Contains("<agent1."):
			rep = call("vote", map[string]string{"agent_id": "agent1", "reason": "the clearest"})
		case r.HasTool("vote"):
			rep = call("list_files", map[string]string{})
			rep.Delay = 50 * time.Millisecond
		default:
			rep = call("new_answer", map[string]string{"content": "an answer from " + agentOf(r.Model)})
		}
		switch {
		case r.Contains("VERYSLOW"):
			rep.Delay += 2 * time.Second
		case r.Contains("SLOW"):
			rep.Delay += 700 * time.Millisecond
		}
		return rep
	}))
	st, err := storage.Open(context.Background(), minio.URL("conclave", "sessions"))
	require.NoError(t, err)
	c := temporal.Client(t)
	w := worker.New(c, worker.Options{Store: st, Namespace: "default", HeartbeatEvery: time.Second})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	var yaml strings.Builder
	yaml.WriteString("agents:\n")
	for _, id := range []string{"agent_a", "agent_b"} {
		fmt.Fprintf(&yaml, "  - id: %s\n    backend: {type: openai, model: m-%s, base_url: %s}\n", id, id, model.URL())
	}
	yaml.WriteString("orchestrator:\n  orchestrator_timeout_seconds: 300\n")
	return &serveEnv{temporal: temporal, c: c, model: model, teamYAML: yaml.String()}
}

// serveInProcess runs serve.Server on a loopback port with the given keys.
func (e *serveEnv) serveInProcess(t testing.TB, perKey int, keys ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "team.yaml")
	require.NoError(t, os.WriteFile(path, []byte(e.teamYAML), 0o600))
	team, _, err := serve.LoadTeam(path)
	require.NoError(t, err)
	parsed, err := serve.ParseKeys(strings.Join(keys, ","), "test")
	require.NoError(t, err)
	srv, err := serve.New(t.Context(), serve.Options{Client: e.c, TaskQueue: worker.DefaultTaskQueue, Teams: []serve.Team{team},
		Keys: parsed, KeySearchAttribute: true, MaxRunsPerKey: perKey, MaxMessages: 300})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: srv.Handler()}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

func openaiClient(base, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// waitDone polls GET /v1/responses/{id} with openai-go until the run has ended.
func waitDone(t *testing.T, oc openai.Client, id string) *responses.Response {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r, err := oc.Responses.Get(context.Background(), id, responses.ResponseGetParams{})
		require.NoError(t, err)
		switch r.Status {
		case "completed", "failed", "cancelled":
			return r
		}
		require.True(t, time.Now().Before(deadline), "response %s still %s", id, r.Status)
		time.Sleep(200 * time.Millisecond)
	}
}

func TestServe(t *testing.T) {
	env := startServeEnv(t)
	base := env.serveInProcess(t, 2, keyAlice, keyBob)

	t.Run("responses with openai-go: background, stream from a sequence number, follow-up, usage, visibility", func(t *testing.T) {
		oc := openaiClient(base, secretOf(keyAlice))
		ctx := context.Background()
		created, err := oc.Responses.New(ctx, responses.ResponseNewParams{
			Model: "team", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Name the best Beatles album.")},
			Background: openai.Bool(true), MaxOutputTokens: openai.Int(77),
		})
		require.NoError(t, err)
		require.Contains(t, []string{"queued", "in_progress"}, string(created.Status))
		id := created.ID
		// The id is the workflow id, and the workflow exists already.
		_, err = env.c.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err)

		done := waitDone(t, oc, id)
		require.Equal(t, responses.ResponseStatus("completed"), done.Status)
		require.Equal(t, "FINAL ANSWER from the team", done.OutputText())

		var res workflows.CoordinationResult
		require.NoError(t, env.c.GetWorkflow(ctx, id, "").Get(ctx, &res))
		require.Positive(t, res.Usage.InputTokens)
		require.Equal(t, res.Usage.InputTokens, done.Usage.InputTokens)
		require.Equal(t, res.Usage.OutputTokens, done.Usage.OutputTokens)
		// The real sum: every prompt the scripted model saw for this run.
		var prompts int64
		for _, r := range env.model.Requests() {
			if r.Contains("Name the best Beatles album.") {
				prompts += r.PromptTokens()
				require.NotNil(t, r.MaxTokens)
				require.LessOrEqual(t, *r.MaxTokens, int64(77), "max_output_tokens lowers every agent's limit")
			}
		}
		require.Equal(t, prompts, done.Usage.InputTokens)
		var meta struct {
			Conclave struct {
				SessionID string         `json:"session_id"`
				Winner    string         `json:"winner"`
				DecidedBy string         `json:"decided_by"`
				Votes     map[string]int `json:"votes"`
				Answers   []struct {
					Label, Agent string
				} `json:"answers"`
			} `json:"conclave"`
		}
		require.NoError(t, json.Unmarshal([]byte(done.RawJSON()), &meta))
		require.Equal(t, id, meta.Conclave.SessionID)
		require.Equal(t, "agent_a", meta.Conclave.Winner)
		require.Equal(t, "consensus", meta.Conclave.DecidedBy)
		require.Equal(t, map[string]int{"agent_a": 2}, meta.Conclave.Votes)
		require.Len(t, meta.Conclave.Answers, 2)

		// A stream read from sequence number 4 on has exactly the events
		// after it, numbered on from 5, ending in response.completed.
		stream := oc.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{StartingAfter: openai.Int(4)})
		var seqs []int64
		var last string
		for stream.Next() {
			ev := stream.Current()
			seqs = append(seqs, ev.SequenceNumber)
			last = ev.Type
		}
		require.NoError(t, stream.Err())
		require.NotEmpty(t, seqs)
		for i, s := range seqs {
			require.Equal(t, int64(5+i), s)
		}
		require.Equal(t, "response.completed", last)

		// The key's name (never the key) is the search attribute.
		require.Eventually(t, func() bool {
			resp, err := env.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Query: fmt.Sprintf("%s = 'alice' AND WorkflowId = '%s'", contract.SearchAttrServeKey, id)})
			return err == nil && len(resp.GetExecutions()) == 1
		}, 20*time.Second, 200*time.Millisecond)
		requireNoSecretInHistory(t, env.c, id)

		// Another key cannot read it.
		bob := openaiClient(base, secretOf(keyBob))
		_, err = bob.Responses.Get(ctx, id, responses.ResponseGetParams{})
		requireAPIStatus(t, err, 404)

		// A follow-up turn gives the agents the earlier turn as context.
		next, err := oc.Responses.New(ctx, responses.ResponseNewParams{
			Model: "team", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("And the second best?")},
			PreviousResponseID: openai.String(id),
		})
		require.NoError(t, err)
		require.Equal(t, "FINAL ANSWER from the team", next.OutputText())
		seen := false
		for _, r := range env.model.Requests() {
			if r.Contains("And the second best?") && r.Contains("Name the best Beatles album.") && r.Contains("FINAL ANSWER from the team") {
				seen = true
			}
		}
		require.True(t, seen, "the follow-up's agents were shown the earlier question and answer")
	})

	t.Run("cancel keeps the stored answers", func(t *testing.T) {
		oc := openaiClient(base, secretOf(keyBob))
		ctx := context.Background()
		created, err := oc.Responses.New(ctx, responses.ResponseNewParams{
			Model: "team", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("SLOW cancel me")}, Background: openai.Bool(true),
		})
		require.NoError(t, err)
		// Wait for a first answer, then cancel.
		require.Eventually(t, func() bool {
			r, err := oc.Responses.Get(ctx, created.ID, responses.ResponseGetParams{})
			return err == nil && strings.Contains(r.RawJSON(), `"label":"agent`)
		}, time.Minute, 100*time.Millisecond)
		cancelled, err := oc.Responses.Cancel(ctx, created.ID)
		require.NoError(t, err)
		require.Equal(t, responses.ResponseStatus("cancelled"), cancelled.Status)
		st, err := queryStatusOf(env.c, created.ID)
		require.NoError(t, err)
		require.Equal(t, "cancelled", st.Phase)
		answered := 0
		for _, a := range st.Agents {
			answered += a.AnswerCount
		}
		require.Positive(t, answered, "the answers given before the cancel are kept")
	})

	t.Run("resume: a killed reader reconnects with starting_after and misses nothing", func(t *testing.T) {
		oc := openaiClient(base, secretOf(keyAlice))
		created, err := oc.Responses.New(context.Background(), responses.ResponseNewParams{
			Model: "team", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("SLOW resume me")}, Background: openai.Bool(true),
		})
		require.NoError(t, err)
		ctx, kill := context.WithCancel(context.Background())
		first := oc.Responses.GetStreaming(ctx, created.ID, responses.ResponseGetParams{StartingAfter: openai.Int(-1)})
		got, lastSeq := readEvents(t, first, "answered") // mid-run: the client dies
		kill()
		first.Close()
		require.Greater(t, lastSeq, int64(2))
		rest, _ := readEvents(t, oc.Responses.GetStreaming(context.Background(), created.ID, responses.ResponseGetParams{StartingAfter: openai.Int(lastSeq)}), "")
		want, _ := readEvents(t, oc.Responses.GetStreaming(context.Background(), created.ID, responses.ResponseGetParams{}), "")
		require.Equal(t, want, append(got, rest...), "the two reads together are the whole stream: no gap, no duplicate")
		require.Contains(t, want[len(want)-1], "response.completed")
	})

	t.Run("a chat client that disconnects leaves its run, which GET /v1/responses/{id} reads", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
			strings.NewReader(`{"model":"team","stream":true,"messages":[{"role":"user","content":"SLOW then hang up"}]}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+secretOf(keyBob))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var first struct{ ID string }
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &first))
		require.NoError(t, resp.Body.Close()) // the client goes away mid-run
		// A client that never saw the id finds it among its key's runs,
		// another key's list does not have it.
		list := func(key string) []string {
			req, err := http.NewRequest(http.MethodGet, base+"/v1/responses", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+secretOf(key))
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var l struct{ Data []struct{ ID string } }
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&l))
			var ids []string
			for _, d := range l.Data {
				ids = append(ids, d.ID)
			}
			return ids
		}
		require.Eventually(t, func() bool { return slices.Contains(list(keyBob), first.ID) }, 30*time.Second, 200*time.Millisecond)
		require.NotContains(t, list(keyAlice), first.ID)
		done := waitDone(t, openaiClient(base, secretOf(keyBob)), first.ID)
		require.Equal(t, responses.ResponseStatus("completed"), done.Status)
		require.Equal(t, "FINAL ANSWER from the team", done.OutputText())
	})

	t.Run("the openai npm client: chat, streamed chat with a follow-up, background and poll", func(t *testing.T) {
		env.nodeClient(t, base)
	})

	t.Run("abuse", func(t *testing.T) {
		env.abuse(t, base)
	})
}

// requireAPIStatus checks an openai-go error's HTTP status.
func requireAPIStatus(t *testing.T, err error, status int) {
	t.Helper()
	require.Error(t, err)
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, status, apiErr.StatusCode, apiErr.Error())
}

func requireNoSecretInHistory(t *testing.T, c client.Client, id string) {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	var all strings.Builder
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		data, _ := json.Marshal(ev)
		all.WriteString(decodePayloads(string(data)))
	}
	for _, k := range []string{keyAlice, keyBob} {
		require.NotContains(t, all.String(), secretOf(k))
	}
	require.Contains(t, all.String(), `"key":"alice"`)
}

type statusView struct {
	Phase  string `json:"phase"`
	Agents map[string]struct {
		AnswerCount int `json:"answer_count"`
	} `json:"agents"`
}

func queryStatusOf(c client.Client, id string) (statusView, error) {
	var s statusView
	v, err := c.QueryWorkflow(context.Background(), id, "", contract.QueryStatus)
	if err != nil {
		return s, err
	}
	return s, v.Get(&s)
}

// TestServeRestart SIGKILLs the serve process during a background run and
// starts it again: the new process counts the run against its key's cap,
// the run completes, GET returns it, and the event stream read across the
// restart is whole.
func TestServeRestart(t *testing.T) {
	env := startServeEnv(t)
	bin := conclaveBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "team.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("name: crew\n"+env.teamYAML), 0o600))
	port := testenv.FreePort(t)
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	base := "http://" + listen
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--config", cfg, "--listen", listen, "--address", env.temporal.HostPort, "--max-runs-per-key", "1")
		cmd.Env = append(os.Environ(), "CONCLAVE_API_KEYS="+keyAlice)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		require.Eventually(t, func() bool {
			select {
			case <-exited:
				t.Fatalf("conclave serve exited: %s", out.String())
			default:
			}
			resp, err := http.Get(base + "/health")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 200
		}, time.Minute, 100*time.Millisecond)
		return cmd
	}
	p := start()
	oc := openaiClient(base, secretOf(keyAlice))
	created, err := oc.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "crew", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("VERYSLOW survive a restart")}, Background: openai.Bool(true),
	})
	require.NoError(t, err)
	// Read the stream until the first answer, then kill serve under it.
	stream := oc.Responses.GetStreaming(context.Background(), created.ID, responses.ResponseGetParams{})
	got, _ := readEvents(t, stream, "answered")
	require.NoError(t, p.Process.Signal(syscall.SIGKILL))
	more, last := readEvents(t, stream, "", true)
	got = append(got, more...)
	if last < 0 {
		last = int64(len(got) - 1)
	}
	stream.Close()
	start()
	// The new process counted the run still going against the key's cap.
	_, err = oc.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "crew", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("one too many")}, Background: openai.Bool(true),
	})
	requireAPIStatus(t, err, 429)
	done := waitDone(t, oc, created.ID)
	require.Equal(t, responses.ResponseStatus("completed"), done.Status)
	require.Equal(t, "FINAL ANSWER from the team", done.OutputText())
	// It is an ordinary session: conclave status shows it.
	out, stderr, code := runBin(t, bin, "status", created.ID, "--address", env.temporal.HostPort)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, `"phase": "done"`)
	require.Contains(t, out, `"winner": "agent_a"`)
	rest, _ := readEvents(t, oc.Responses.GetStreaming(context.Background(), created.ID, responses.ResponseGetParams{StartingAfter: openai.Int(last)}), "")
	got = append(got, rest...)
	for i, line := range got {
		require.True(t, strings.HasPrefix(line, fmt.Sprintf("%d ", i)), "event %d is %q", i, line)
	}
	require.Contains(t, got[len(got)-1], "response.completed")
}

type eventStream = *ssestream.Stream[responses.ResponseStreamEventUnion]

// readEvents reads a Responses event stream as "seq event-json" lines, up
// to the first delta containing stop, else to the end, which must be clean
// unless cut (the server was killed under it). It returns the lines and
// the last sequence number read.
func readEvents(t *testing.T, s eventStream, stop string, cut ...bool) ([]string, int64) {
	t.Helper()
	var lines []string
	last := int64(-1)
	for s.Next() {
		ev := s.Current()
		lines = append(lines, fmt.Sprintf("%d %s", ev.SequenceNumber, ev.RawJSON()))
		last = ev.SequenceNumber
		if stop != "" && strings.Contains(ev.Delta, stop) {
			return lines, last
		}
	}
	if len(cut) == 0 {
		require.NoError(t, s.Err())
	}
	return lines, last
}

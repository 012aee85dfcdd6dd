//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/conclave-ai/conclave/codec"
	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// TestCodecEncryptsHistory runs a session whose client and worker encrypt
// payloads, with the task, answers and a model error all carrying a marker.
// A client without the key then reads the whole history: the marker is in
// no event, and no payload, however decoded; the same history decrypted
// with the key does hold it (in the input, the summary, answer previews and
// the failure), so the scan cannot pass merely because the marker never
// reached the history. A client without the key cannot read the result; a
// client with it can.
func TestCodecEncryptsHistory(t *testing.T) {
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	marker := "ZEBRA" + hex.EncodeToString(b)
	task := "Plan a picnic for " + marker + "."
	key := make([]byte, 32)
	_, err = rand.Read(key)
	require.NoError(t, err)
	c, err := codec.New(key)
	require.NoError(t, err)

	server := testenv.StartTemporal(t)
	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		switch {
		case agentOf(r.Model) == "agent_c":
			// Not retryable: agent_c fails and its error text lands in history.
			return llmtest.Reply{Status: 400, Error: "cannot plan for " + marker}
		case strings.Contains(r.Messages[0].Content, "present the final answer"):
			return call("new_answer", map[string]string{"content": "FINAL: a picnic for " + marker})
		case r.HasTool("vote"):
			return call("vote", map[string]string{"agent_id": lowestSeenAgent(r), "reason": "it is complete"})
		default:
			return call("new_answer", map[string]string{"content": agentOf(r.Model) + " plans a picnic for " + marker})
		}
	}))
	st, err := storage.NewLocal(t.TempDir())
	require.NoError(t, err)

	dial := func(o client.Options) client.Client {
		t.Helper()
		o.HostPort, o.Namespace = server.HostPort, server.Namespace
		o.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
		cl, err := client.Dial(o)
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	enc := dial(codec.ClientOptions(client.Options{}, c))
	w := worker.New(enc, worker.Options{Store: st, Namespace: server.Namespace})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const id = "codec-1"
	run, err := enc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: worker.DefaultTaskQueue, StaticSummary: task},
		contract.CoordinationName, workflows.CoordinationInput{Task: task, Config: team(t, srv.URL(), "agent_a", "agent_b", "agent_c")})
	require.NoError(t, err)
	var res workflows.CoordinationResult
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, coord.StatusConsensus, res.Status)
	require.Equal(t, "agent_a", res.Winner)
	require.Equal(t, "FINAL: a picnic for "+marker, res.FinalAnswer)

	plain := dial(client.Options{})
	iter := plain.GetWorkflowHistory(ctx, id, "", false, 0)
	var events, encrypted, decryptedHits int
	var hitKinds []string
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		events++
		data, err := json.Marshal(ev)
		require.NoError(t, err)
		if strings.Contains(decodePayloads(string(data)), marker) {
			t.Errorf("the task marker is readable without the key in %s", ev.GetEventType())
		}
		for _, p := range payloadsOf(ev) {
			if string(p.GetMetadata()[converter.MetadataEncoding]) != codec.Encoding {
				continue
			}
			encrypted++
			dec, err := c.Decode([]*commonpb.Payload{p})
			require.NoError(t, err, "event %s", ev.GetEventType())
			if strings.Contains(string(dec[0].GetData()), marker) {
				decryptedHits++
				hitKinds = append(hitKinds, ev.GetEventType().String())
			}
		}
	}
	require.Positive(t, events)
	require.Positive(t, encrypted, "no encrypted payload in history")
	require.Positive(t, decryptedHits, "the marker never reached the history; the scan proves nothing")
	// The task is in the start event twice (input and summary), agent_c's
	// error in the failed activity.
	require.GreaterOrEqual(t, countOf(hitKinds, "WorkflowExecutionStarted"), 2, hitKinds)
	require.Contains(t, hitKinds, "ActivityTaskFailed")
	t.Logf("%d events, %d encrypted payloads, %d hold the marker once decrypted", events, encrypted, decryptedHits)

	// Without the key the result is opaque; with it, it reads.
	var opaque workflows.CoordinationResult
	require.Error(t, plain.GetWorkflow(ctx, id, "").Get(ctx, &opaque))
	reader, err := codec.New(key)
	require.NoError(t, err)
	var again workflows.CoordinationResult
	require.NoError(t, dial(codec.ClientOptions(client.Options{}, reader)).GetWorkflow(ctx, id, "").Get(ctx, &again))
	require.Equal(t, res.FinalAnswer, again.FinalAnswer)
	require.Equal(t, res.Winner, again.Winner)
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

var answerLabel = regexp.MustCompile(`<(agent\d+)\.\d+>`)

// lowestSeenAgent is the lowest anonymous id with an answer in the
// request, so votes converge however answers and injections interleave.
func lowestSeenAgent(r llmtest.Request) string {
	var seen []string
	for _, m := range r.Messages {
		for _, g := range answerLabel.FindAllStringSubmatch(m.Content, -1) {
			seen = append(seen, g[1])
		}
	}
	if len(seen) == 0 {
		return "agent1"
	}
	return slices.Min(seen)
}

// payloadsOf returns every Payload anywhere inside an event: inputs,
// results, heartbeats, user metadata, failure attributes.
func payloadsOf(ev *historypb.HistoryEvent) []*commonpb.Payload {
	var out []*commonpb.Payload
	var walk func(m protoreflect.Message)
	visit := func(v protoreflect.Value) {
		if p, ok := v.Message().Interface().(*commonpb.Payload); ok {
			out = append(out, p)
			return
		}
		walk(v.Message())
	}
	walk = func(m protoreflect.Message) {
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := range v.List().Len() {
					visit(v.List().Get(i))
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					visit(mv)
					return true
				})
			case fd.Message() != nil && !fd.IsMap():
				visit(v)
			}
			return true
		})
	}
	walk(ev.ProtoReflect())
	return out
}

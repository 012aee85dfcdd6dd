package agent

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
)

// box is a Toolbox whose tool "slow" can stand for a worker that dies mid
// call: it cancels the step's context while it runs.
type box struct {
	mu     sync.Mutex
	calls  []Call
	cancel context.CancelFunc // called by the next "slow" call, once
}

func (b *box) Specs() []tools.Spec  { return []tools.Spec{{Name: "fast"}, {Name: "slow"}} }
func (b *box) Has(name string) bool { return name == "fast" || name == "slow" }
func (b *box) count(name string) (n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.calls {
		if c.Name == name {
			n++
		}
	}
	return n
}
func (b *box) keys(name string) (keys []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.calls {
		if c.Name == name {
			keys = append(keys, c.Key)
		}
	}
	return keys
}

func (b *box) Call(ctx context.Context, c Call) tools.Result {
	b.mu.Lock()
	b.calls = append(b.calls, c)
	cancel := b.cancel
	if c.Name == "slow" {
		b.cancel = nil
	}
	b.mu.Unlock()
	if c.Name == "slow" && cancel != nil {
		cancel()
		<-ctx.Done()
		return tools.Result{Content: "cut off", IsError: true}
	}
	return tools.Result{Content: c.Name + " result"}
}

// checkpoints keeps every stored transcript.
type checkpoints struct{ saved [][]byte }

func (c *checkpoints) store(_ context.Context, t *Transcript[finishState]) error {
	data, err := t.MarshalJSONL()
	c.saved = append(c.saved, data)
	return err
}

func (c *checkpoints) last(tb testing.TB) *Prior {
	tb.Helper()
	return &Prior{Store: mem{}, Key: "trace.jsonl", Data: c.saved[len(c.saved)-1]}
}

func toolReply(calls ...string) llm.Message {
	m := llm.Message{Role: llm.RoleAssistant}
	for i, name := range calls {
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: "call_" + string(rune('a'+i)), Name: name, Arguments: "{}"})
	}
	return m
}

// A worker that dies during the second call of a reply: the resumed step
// does not repeat the first (completed, checkpointed) call, runs the second
// once more with the same idempotency key, and pays for no model call twice.
func TestToolCallsResumeWithoutRepeatingCompletedOnes(t *testing.T) {
	t.Parallel()
	b := &box{}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	cp := &checkpoints{}
	model := &script{replies: []llm.Message{toolReply("fast", "slow")}}
	cfg := Config[finishState]{Model: model, MaxTurns: 5, Messages: opening(), Files: Files{Tools: b}, CallScope: "s/a/1/launch1", Checkpoint: cp.store}
	_, err := Run(ctx, cfg, finish{})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, b.count("fast"))
	require.Equal(t, 1, b.count("slow"))

	stored, err := ParseTranscript[finishState](cp.last(t).Data)
	require.NoError(t, err)
	require.Len(t, stored.Calls, 2, "both calls are recorded in the checkpoint")
	require.NotNil(t, stored.Calls[0].Result, "the completed call's result is stored")
	assert.Equal(t, "fast result", stored.Calls[0].Result.Content)
	assert.Nil(t, stored.Calls[1].Result, "the call in flight is recorded as started only")
	assert.Equal(t, 1, stored.Calls[1].Attempts)

	model2 := &script{replies: []llm.Message{toolReply("done")}}
	cfg.Model, cfg.Prior = model2, cp.last(t)
	tr, err := Run(context.Background(), cfg, finish{})
	require.NoError(t, err)
	assert.Equal(t, 1, b.count("fast"), "a completed call is never repeated")
	assert.Equal(t, 2, b.count("slow"), "the call in flight runs once more")
	keys := b.keys("slow")
	assert.Equal(t, keys[0], keys[1], "with the same idempotency key")
	assert.NotEqual(t, b.keys("fast")[0], keys[0])
	assert.Equal(t, 1, model2.calls, "the first reply is not asked for again")
	assert.Equal(t, "fast result", tr.Messages[3].Content)
	assert.Equal(t, "slow result", tr.Messages[4].Content)
	assert.Empty(t, tr.Calls, "records go once the reply is answered")
	assert.Equal(t, ToolStats{Calls: 1}, tr.Tools["fast"])
}

// A call that was started twice and never completed is not run a third
// time: the model is told its outcome is unknown.
func TestToolCallRunsAtMostTwice(t *testing.T) {
	t.Parallel()
	b := &box{}
	reply := toolReply("fast")
	saved := &Transcript[finishState]{Turns: 1, Messages: append(opening(), reply),
		Calls: []CallRecord{{ID: reply.ToolCalls[0].ID, Name: "fast", Key: "k", Attempts: MaxCallAttempts}}}
	model := &script{replies: []llm.Message{toolReply("done")}}
	cfg := Config[finishState]{Model: model, MaxTurns: 5, Messages: opening(), Files: Files{Tools: b}, Prior: stored(t, saved)}
	tr, err := Run(context.Background(), cfg, finish{})
	require.NoError(t, err)
	assert.Zero(t, b.count("fast"))
	assert.Contains(t, tr.Messages[3].Content, "interrupted 2 times")
	assert.Contains(t, tr.Messages[3].Content, errorPrefix)
}

// Keys differ by scope, position and call id, and are stable.
func TestCallKey(t *testing.T) {
	t.Parallel()
	k := CallKey("s/a/1/1", 2, "call_a")
	assert.Equal(t, k, CallKey("s/a/1/1", 2, "call_a"))
	assert.NotEqual(t, k, CallKey("s/a/1/2", 2, "call_a"))
	assert.NotEqual(t, k, CallKey("s/a/1/1", 4, "call_a"))
	assert.NotEqual(t, k, CallKey("s/a/1/1", 2, "call_b"))
	assert.Len(t, k, 32)
}

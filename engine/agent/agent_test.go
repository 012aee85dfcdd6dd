package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
)

// script is a model that replays fixed replies and counts its calls.
type script struct {
	replies []llm.Message
	calls   int
}

func (s *script) Complete(context.Context, llm.Request) (llm.Response, error) {
	s.calls++
	return llm.Response{Message: s.replies[s.calls-1], Usage: coord.Usage{InputTokens: 1}}, nil
}

// finish is a test policy: workspace tools run, the tool "done" ends the step.
type finish struct{}

type finishState struct {
	Done bool `json:"done"`
}

func (finish) Tools(_ *Transcript[finishState], f Files) []tools.Spec { return f.Specs() }
func (finish) Handle(ctx context.Context, t *Transcript[finishState], reply llm.Message, f Files) (Turn, error) {
	var turn Turn
	for _, c := range reply.ToolCalls {
		res, ok := f.Call(ctx, c)
		if c.Name == "done" {
			res, ok, t.State.Done, turn.Done = tools.Result{Content: "ok"}, true, true, true
		}
		if !ok {
			res = tools.Result{Content: "no such tool", IsError: true}
		}
		turn.Results = append(turn.Results, res)
	}
	return turn, nil
}
func (finish) SafePoint(context.Context, *Transcript[finishState]) ([]llm.Message, error) {
	return nil, nil
}
func (finish) OutOfTurns(*Transcript[finishState]) error { return context.DeadlineExceeded }
func (finish) Finished(t *Transcript[finishState]) bool  { return t.State.Done }
func (finish) Check(*Transcript[finishState]) error      { return nil }

// mem is a Store in memory.
type mem map[string][]byte

func (m mem) Put(_ context.Context, key string, data []byte) error { m[key] = data; return nil }

// stored is t as a stored checkpoint.
func stored[S any](tb testing.TB, t *Transcript[S]) *Prior {
	tb.Helper()
	data, err := t.MarshalJSONL()
	require.NoError(tb, err)
	return &Prior{Store: mem{}, Key: "trace.jsonl", Data: data}
}

func write(id, path string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: tools.WriteFile, Arguments: `{"path":"` + path + `","content":"x"}`}
}

// A resumed step applies again the writes that were answered and allowed,
// and leaves an unanswered reply to the loop.
func TestResumeReplaysAnsweredAllowedWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := Files{Workspace: &tools.Workspace{Dir: dir}, Allow: func(n string) bool { return n != tools.ReadFile }}
	saved := &Transcript[finishState]{Turns: 2, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "s"},
		{Role: llm.RoleUser, Content: "u"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{write("1", "answered.txt"), write("2", "unanswered.txt")}},
		{Role: llm.RoleTool, ToolCallID: "1", Content: "ok"},
		{Role: llm.RoleUser, Content: "more"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{write("2", "last.txt"), {ID: "3", Name: "done"}}},
	}}
	m := &script{}
	t2, err := Run(context.Background(), Config[finishState]{Model: m, MaxTurns: 5, Files: files, Prior: stored(t, saved)}, finish{})
	require.NoError(t, err)
	require.Zero(t, m.calls, "the last reply is answered without a model call")
	require.True(t, t2.State.Done)
	for name, want := range map[string]bool{"answered.txt": true, "unanswered.txt": false, "last.txt": true} {
		_, err := os.Stat(filepath.Join(dir, name))
		require.Equal(t, want, err == nil, name)
	}
}

// A write the step does not allow is answered with an error and never
// replayed.
func TestReplaySkipsDisallowedWrites(t *testing.T) {
	t.Parallel()
	m := &script{replies: []llm.Message{
		{ToolCalls: []llm.ToolCall{write("1", "a.txt")}},
		{ToolCalls: []llm.ToolCall{{ID: "2", Name: "done"}}},
	}}
	var last []byte
	cfg := Config[finishState]{
		Model: m, MaxTurns: 5, Messages: []llm.Message{{Role: llm.RoleUser, Content: "go"}},
		Files:      Files{Workspace: &tools.Workspace{Dir: t.TempDir()}, Allow: func(string) bool { return false }},
		Checkpoint: func(_ context.Context, t *Transcript[finishState]) error { last, _ = t.MarshalJSONL(); return nil },
	}
	_, err := Run(context.Background(), cfg, finish{})
	require.NoError(t, err)
	saved, err := ParseTranscript[finishState](last)
	require.NoError(t, err)
	require.Equal(t, "Error: no such tool", saved.Messages[2].Content)
	require.Equal(t, 2, saved.Turns)

	cfg.Prior = stored(t, saved) // the same step on a new worker
	dir := t.TempDir()
	cfg.Files.Workspace = &tools.Workspace{Dir: dir}
	_, err = Run(context.Background(), cfg, finish{})
	require.NoError(t, err)
	require.Equal(t, 2, m.calls, "a finished step makes no call")
	_, err = os.Stat(filepath.Join(dir, "a.txt"))
	require.True(t, os.IsNotExist(err), "a refused write is not replayed")
}

// The state line is one flat object, so a coordination trace.jsonl written
// before the engine was shared still resumes.
func TestStateLineIsFlat(t *testing.T) {
	t.Parallel()
	legacy := `{"kind":"state","state":{"tag":"3","seen_steps":{"agent_a":1},"known":null,"human_seen":0,"attempts":1,"injections":0,"turns":2,"usage":{"input_tokens":5,"output_tokens":1,"cost_usd":0}}}
{"kind":"message","message":{"role":"system","content":"s"}}
`
	type coordination struct {
		SeenSteps map[string]int `json:"seen_steps"`
		Attempts  int            `json:"attempts"`
	}
	tr, err := ParseTranscript[coordination]([]byte(legacy))
	require.NoError(t, err)
	require.Equal(t, "3", tr.Tag)
	require.Equal(t, 2, tr.Turns)
	require.Equal(t, int64(5), tr.Usage.InputTokens)
	require.Equal(t, coordination{SeenSteps: map[string]int{"agent_a": 1}, Attempts: 1}, tr.State)
	require.Len(t, tr.Messages, 1)

	data, err := tr.MarshalJSONL()
	require.NoError(t, err)
	back, err := ParseTranscript[coordination](data)
	require.NoError(t, err)
	require.Equal(t, tr, back)

	type clash struct {
		Turns int `json:"turns"`
	}
	_, err = (&Transcript[clash]{}).MarshalJSONL()
	require.ErrorContains(t, err, `engine's key "turns"`)
}

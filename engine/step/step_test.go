package step

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

var now = func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }

func team(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(`agents:
  - id: agent_a
    backend: {type: openai, model: m, base_url: http://127.0.0.1:1/v1}
  - id: agent_b
    backend: {type: openai, model: m, base_url: http://127.0.0.1:1/v1}
`), "team.yaml")
	require.NoError(t, err)
	return cfg
}

func model(t *testing.T, srv *llmtest.Server) llm.Model {
	t.Helper()
	m, err := llm.New(llm.Config{Model: "m", BaseURL: srv.URL()}, "")
	require.NoError(t, err)
	return m
}

func call(name, args string) llmtest.Reply {
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c", Name: name, Arguments: args}}}
}

func store(t *testing.T) storage.Store {
	t.Helper()
	st, err := storage.NewLocal(t.TempDir())
	require.NoError(t, err)
	return st
}

// A peer's answer stored while an agent works reaches it through storage,
// with the peer's files readable under peers/, and so does human input.
func TestInjectionThroughStorage(t *testing.T) {
	st := store(t)
	cfg := team(t)
	ctx := context.Background()
	_, err := session.Save(ctx, st, session.StepOutput{Agent: "agent_a", Action: coord.ActionNewAnswer, Answer: "A1", Now: now()})
	require.NoError(t, err)
	_, err = session.Save(ctx, st, session.StepOutput{Agent: "agent_b", Action: coord.ActionNewAnswer, Answer: "B1", Now: now()})
	require.NoError(t, err)

	srv := llmtest.Start(t,
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			ws := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(ws, "page.html"), []byte("<p>B2</p>"), 0o644))
			_, err := session.Save(ctx, st, session.StepOutput{Agent: "agent_b", Action: coord.ActionNewAnswer, Answer: "B2", WorkspaceDir: ws, Now: now()})
			require.NoError(t, err)
			require.NoError(t, session.WriteJSON(ctx, st, session.InboxKey(1), session.InboxMessage{Seq: 1, Text: "Mention Ringo."}))
			return llmtest.Reply{Text: "let me think"}
		}).Once(),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			return call("read_file", `{"path":"peers/agent2/page.html"}`)
		}).IfLastContains("agent2.1 -> agent2.2").Once(),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			return call("vote", `{"agent_id":"agent2","reason":"B2"}`)
		}).IfLastContains("<p>B2</p>"),
	)
	res, err := Run(ctx, Options{Store: st, Config: cfg, Agent: "agent_a", Task: "t", Model: model(t, srv), Inject: true, Now: now, Tag: "1"})
	require.NoError(t, err)
	require.Equal(t, coord.ActionVote, res.Outcome.Action)
	require.Equal(t, 2, res.Outcome.SeenSteps["agent_b"])
	require.Equal(t, 2, res.Step)
	require.True(t, strings.Contains(string(srv.Requests()[1].Body), "Mention Ringo."))

	snap, err := session.Load(ctx, st)
	require.NoError(t, err)
	a, _ := snap.Agent("agent_a")
	require.False(t, coord.Stale(snap.Ledger(), a.Vote), "the vote saw agent_b's step 2")
}

func TestResumeOnlyWithMatchingTag(t *testing.T) {
	st := store(t)
	cfg := team(t)
	ctx := context.Background()
	srv := llmtest.Start(t,
		llmtest.Respond(llmtest.Reply{Text: "thinking"}).Once(),
		llmtest.Fail(503, "busy").Once(),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			if r.Contains("<agent1.1> A1") {
				return call("new_answer", `{"content":"B1"}`)
			}
			return call("new_answer", `{"content":"A1"}`)
		}),
	)
	_, err := Run(ctx, Options{Store: st, Config: cfg, Agent: "agent_a", Task: "t", Step: 1, Model: model(t, srv), Tag: "launch-1", Now: now})
	require.True(t, llm.IsRetryable(err))
	require.Equal(t, 2, srv.Count())

	// Same launch: resumes after the stored first turn (one more call).
	_, err = Run(ctx, Options{Store: st, Config: cfg, Agent: "agent_a", Task: "t", Step: 1, Model: model(t, srv), Tag: "launch-1", Now: now})
	require.NoError(t, err)
	require.Equal(t, 3, srv.Count())

	var trace struct {
		State struct{ Turns int } `json:"state"`
	}
	data, err := st.Get(ctx, session.TraceKey("agent_a", 1))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &trace))
	require.Equal(t, 2, trace.State.Turns, "one turn before the failure, one after")

	// Another launch of step 2 starts fresh.
	_, err = Run(ctx, Options{Store: st, Config: cfg, Agent: "agent_b", Task: "t", Model: model(t, srv), Tag: "launch-2", Now: now})
	require.NoError(t, err)
	require.Contains(t, srv.Requests()[3].Last().Content, "<agent1.1> A1 <end of agent1.1>")
}

func TestPresent(t *testing.T) {
	st := store(t)
	cfg := team(t)
	ctx := context.Background()
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "index.html"), []byte("<h1>B</h1>"), 0o644))
	_, err := session.Save(ctx, st, session.StepOutput{Agent: "agent_b", Action: coord.ActionNewAnswer, Answer: "B's answer", WorkspaceDir: ws, Now: now()})
	require.NoError(t, err)

	final, _, err := Present(ctx, PresentOptions{Store: st, Config: cfg, Presenter: "agent_b", Task: "t", Strategy: config.FinalWinnerReuse, Now: now})
	require.NoError(t, err)
	require.Equal(t, "B's answer", final.Answer)
	require.Equal(t, "agent2.final", final.Label)
	require.Equal(t, "agent2.1", final.Source)
	md, err := st.Get(ctx, session.FinalMarkdownKey)
	require.NoError(t, err)
	require.Equal(t, "B's answer\n", string(md))
	html, err := st.Get(ctx, session.FinalWorkspacePrefix+"index.html")
	require.NoError(t, err)
	require.Equal(t, "<h1>B</h1>", string(html))

	srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		return call("new_answer", `{"content":"The polished final answer."}`)
	}).IfTool("new_answer"))
	final, usage, err := Present(ctx, PresentOptions{Store: st, Config: cfg, Presenter: "agent_b", Task: "t", Strategy: config.FinalWinnerPresent, Model: model(t, srv), Now: now})
	require.NoError(t, err)
	require.Equal(t, "The polished final answer.", final.Answer)
	require.Positive(t, usage.InputTokens)
	require.False(t, srv.Requests()[0].HasTool("vote"), "the presenter only answers")

	_, _, err = Present(ctx, PresentOptions{Store: st, Config: cfg, Presenter: "agent_a", Task: "t", Strategy: config.FinalWinnerReuse, Now: now})
	require.ErrorIs(t, err, ErrBadInput)
}

// A relaunch of a step whose earlier attempt checkpointed and stored part
// of its workspace starts from a clean folder: the leftovers do not end up
// in the new answer's workspace.
func TestRelaunchClearsLeftoversOfAnEarlierAttempt(t *testing.T) {
	st := store(t)
	cfg := team(t)
	ctx := context.Background()
	srv := llmtest.Start(t,
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			if r.Last().Role == "tool" {
				return call("new_answer", `{"content":"A with new.md"}`)
			}
			return call("write_file", `{"path":"new.md","content":"new"}`)
		}),
	)
	leftover := session.WorkspacePrefix("agent_a", 1) + "stale.md"
	require.NoError(t, st.Put(ctx, leftover, []byte("from an earlier attempt")))
	require.NoError(t, st.Put(ctx, session.TraceKey("agent_a", 1), []byte(`{"tag":"launch-1"}`+"\n")))

	_, err := Run(ctx, Options{Store: st, Config: cfg, Agent: "agent_a", Task: "t", Step: 1, Model: model(t, srv), Tag: "launch-2", Now: now})
	require.NoError(t, err)
	_, err = st.Get(ctx, session.WorkspacePrefix("agent_a", 1)+"new.md")
	require.NoError(t, err)
	_, err = st.Get(ctx, leftover)
	require.ErrorIs(t, err, storage.ErrNotFound, "the earlier attempt's file was cleared")
}

// Human input is not a peer update: it reaches a running step even when
// peer injection is off (disable_injection, update_mode restart), while
// the peer answer stored meanwhile waits for the next step.
func TestHumanInputWithoutPeerInjection(t *testing.T) {
	st, cfg, ctx := store(t), team(t), context.Background()
	_, err := session.Save(ctx, st, session.StepOutput{Agent: "agent_b", Action: coord.ActionNewAnswer, Answer: "B1", Now: now()})
	require.NoError(t, err)
	_, err = session.Save(ctx, st, session.StepOutput{Agent: "agent_a", Action: coord.ActionNewAnswer, Answer: "A1", Now: now()})
	require.NoError(t, err)
	srv := llmtest.Start(t,
		llmtest.Func(func(llmtest.Request) llmtest.Reply {
			_, err := session.Save(ctx, st, session.StepOutput{Agent: "agent_b", Action: coord.ActionNewAnswer, Answer: "B2", Now: now()})
			require.NoError(t, err)
			require.NoError(t, session.WriteJSON(ctx, st, session.InboxKey(1), session.InboxMessage{Seq: 1, Text: "Mention Ringo."}))
			return llmtest.Reply{Text: "thinking"}
		}).Once(),
		llmtest.Func(func(llmtest.Request) llmtest.Reply { return call("vote", `{"agent_id":"agent2","reason":"B"}`) }).IfLastContains("Mention Ringo."),
	)
	res, err := Run(ctx, Options{Store: st, Config: cfg, Agent: "agent_a", Task: "t", Model: model(t, srv), Inject: false, Now: now, Tag: "1"})
	require.NoError(t, err)
	require.Equal(t, 1, res.Outcome.SeenSteps["agent_b"], "the peer's new answer was not injected")
	last := srv.Requests()[1].Last().Content
	require.Contains(t, last, "UPDATE: The user sent input while you were working.")
	require.NotContains(t, last, "B2")
}

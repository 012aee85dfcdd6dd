package step

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

// limitedTeam is agent_a, agent_b and agent_c with the given orchestrator
// settings (YAML lines).
func limitedTeam(t *testing.T, orchestrator string) *config.Config {
	t.Helper()
	var agents strings.Builder
	for _, id := range []string{"agent_a", "agent_b", "agent_c"} {
		fmt.Fprintf(&agents, "  - id: %s\n    backend: {type: openai, model: m, base_url: http://127.0.0.1:1/v1}\n", id)
	}
	cfg, err := config.Parse([]byte("agents:\n"+agents.String()+"orchestrator:\n"+orchestrator), "team.yaml")
	require.NoError(t, err)
	return cfg
}

func saveAnswer(t *testing.T, st storage.Store, agent, text string) {
	t.Helper()
	_, err := session.Save(context.Background(), st, session.StepOutput{Agent: agent, Action: coord.ActionNewAnswer, Answer: text, Now: now()})
	require.NoError(t, err)
}

func storedAnswers(t *testing.T, st storage.Store) int {
	t.Helper()
	snap, err := session.Load(context.Background(), st)
	require.NoError(t, err)
	return coord.TotalAnswers(snap.Ledger())
}

// Seed 001: answer limits are checked when the model submits, against the
// answers stored then. agent_b's step starts with one answer stored; while
// it works a second one is stored, so under a global cap of 2 its answer
// is refused with a tool error saying what to do, and it votes.
func TestGlobalCapCheckedAtSubmission(t *testing.T) {
	st := store(t)
	ctx := context.Background()
	cfg := limitedTeam(t, "  max_new_answers_global: 2\n  max_new_answers_per_agent: null\n  fairness_enabled: false\n")
	saveAnswer(t, st, "agent_a", "A1")
	srv := llmtest.Start(t,
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			saveAnswer(t, st, "agent_a", "A2") // a peer answers meanwhile
			return call("new_answer", `{"content":"B1"}`)
		}).Once(),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			return call("vote", `{"agent_id":"agent1","reason":"A is good"}`)
		}).IfLastContains("global answer limit reached (2 of 2): vote for the best answer instead"),
	)
	res, err := Run(ctx, Options{Store: st, Config: cfg, Agent: "agent_b", Task: "t", Model: model(t, srv), Now: now})
	require.NoError(t, err)
	require.Equal(t, coord.ActionVote, res.Outcome.Action)
	require.Equal(t, 2, storedAnswers(t, st), "the cap holds")
}

// listBarrier holds every first listing of the answer slots until n
// steps are listing them, so the steps race for the same slot.
type listBarrier struct {
	storage.Store
	mu      sync.Mutex
	waiting int
	n       int
	release chan struct{}
}

func (b *listBarrier) List(ctx context.Context, prefix string) ([]string, error) {
	if prefix == session.AnswerSlotsPrefix {
		b.mu.Lock()
		b.waiting++
		if b.waiting == b.n {
			close(b.release)
		}
		b.mu.Unlock()
		<-b.release
	}
	return b.Store.List(ctx, prefix)
}

// Two steps submitting at the same instant under a global cap with room
// for one more answer: exactly one is admitted; the other is told the cap
// is reached and votes.
func TestConcurrentSubmissionsKeepTheGlobalCap(t *testing.T) {
	base := store(t)
	ctx := context.Background()
	cfg := limitedTeam(t, "  max_new_answers_global: 2\n  max_new_answers_per_agent: null\n  fairness_enabled: false\n")
	saveAnswer(t, base, "agent_a", "A1")
	st := &listBarrier{Store: base, n: 2, release: make(chan struct{})}

	runStep := func(agent, content string) (*Result, error) {
		srv := llmtest.Start(t,
			llmtest.Respond(call("new_answer", `{"content":"`+content+`"}`)).Once(),
			llmtest.Respond(call("vote", `{"agent_id":"agent1","reason":"good"}`)).IfLastContains("global answer limit reached"),
		)
		return Run(ctx, Options{Store: st, Config: cfg, Agent: agent, Task: "t", Model: model(t, srv), Now: now})
	}
	var wg sync.WaitGroup
	results := make([]*Result, 2)
	errs := make([]error, 2)
	for i, agent := range []string{"agent_b", "agent_c"} {
		wg.Go(func() { results[i], errs[i] = runStep(agent, "answer of "+agent) })
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	actions := []coord.Action{results[0].Outcome.Action, results[1].Outcome.Action}
	require.ElementsMatch(t, []coord.Action{coord.ActionNewAnswer, coord.ActionVote}, actions)
	require.Equal(t, 2, storedAnswers(t, base), "at most the cap is stored")
}

// A slot counts while its step may still store an answer: not once that
// step voted, nor once it is fenced; a retry of the same step finds its
// own slot and is admitted even at the cap.
func TestAnswerSlots(t *testing.T) {
	ctx := context.Background()
	one := 1
	gate := func(st storage.Store, agent string, step int) *answerGate {
		return &answerGate{store: st, team: []string{"agent_a", "agent_b", "agent_c"}, agent: agent, step: step,
			lim: coord.Limits{MaxNewAnswersGlobal: &one}}
	}
	admit := func(g *answerGate) string {
		t.Helper()
		refusal, err := g.AdmitAnswer(ctx, nil)
		require.NoError(t, err)
		return refusal
	}
	for _, tc := range []struct {
		name   string
		holder func(t *testing.T, st storage.Store) // after agent_a's step 1 took the slot
		admit  bool
	}{
		{"the holder is still working", func(*testing.T, storage.Store) {}, false},
		{"the holder stored its answer", func(t *testing.T, st storage.Store) { saveAnswer(t, st, "agent_a", "A1") }, false},
		{"the holder voted instead", func(t *testing.T, st storage.Store) {
			_, err := session.Save(ctx, st, session.StepOutput{Agent: "agent_a", Step: 1, Action: coord.ActionVote, Target: "agent_a", Now: now()})
			require.NoError(t, err)
		}, true},
		{"the holder is fenced", func(t *testing.T, st storage.Store) {
			require.NoError(t, st.Put(ctx, session.StepPrefix("agent_a", 1)+"launch.json", []byte(`{"fenced":true}`)))
		}, true},
		{"the holder's launch is live", func(t *testing.T, st storage.Store) {
			require.NoError(t, st.Put(ctx, session.StepPrefix("agent_a", 1)+"launch.json", []byte(`{"launch":3}`)))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store(t)
			require.Empty(t, admit(gate(st, "agent_a", 1)))
			tc.holder(t, st)
			refusal := admit(gate(st, "agent_b", 1))
			if tc.admit {
				require.Empty(t, refusal)
			} else {
				require.Contains(t, refusal, "global answer limit reached (1 of 1)")
			}
			if !strings.Contains(tc.name, "stored") && !strings.Contains(tc.name, "voted") {
				require.Empty(t, admit(gate(st, "agent_a", 1)), "a retry of the same step finds its slot")
			}
			keys, err := st.List(ctx, session.AnswerSlotsPrefix)
			require.NoError(t, err)
			var slot session.AnswerSlot
			data, err := st.Get(ctx, keys[0])
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &slot))
			require.Equal(t, session.AnswerSlot{Agent: "agent_a", Step: 1}, slot)
		})
	}
}

// Seed 001, decomposition: `conclave step` for an agent whose answer
// streak is at max_new_answers_per_agent, or once max_new_answers_global
// is reached, stores a stop with status complete and a summary naming the
// limit, without calling the model.
func TestStepModeAutoStop(t *testing.T) {
	for _, tc := range []struct {
		name, orch, summary string
	}{
		{"streak", "  max_new_answers_per_agent: 2\n  max_new_answers_global: null\n",
			"stopped automatically: max_new_answers_per_agent (2) reached: 2 answers in a row without news from peers"},
		{"global", "  max_new_answers_per_agent: null\n  max_new_answers_global: 2\n",
			"stopped automatically: max_new_answers_global (2) reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store(t)
			ctx := context.Background()
			cfg := limitedTeam(t, "  coordination_mode: decomposition\n  fairness_enabled: false\n"+tc.orch)
			for i := range cfg.Agents {
				cfg.Agents[i].Subtask = "part " + cfg.Agents[i].ID
			}
			saveAnswer(t, st, "agent_a", "A1")
			saveAnswer(t, st, "agent_a", "A2")
			srv := llmtest.Start(t) // any model call fails the test's expectations
			res, err := Run(ctx, Options{Store: st, Config: cfg, Agent: "agent_a", Task: "t", Model: model(t, srv), Now: now})
			require.NoError(t, err)
			require.Zero(t, srv.Count(), "no model call")
			require.Equal(t, 3, res.Step)
			var stop session.StopFile
			require.NoError(t, session.ReadJSON(ctx, st, session.StopKey("agent_a", 3), &stop))
			require.Equal(t, "complete", stop.Status)
			require.Equal(t, tc.summary, stop.Summary)
			require.Equal(t, map[string]int{"agent_a": 2}, stop.SeenSteps)

			snap, err := session.Load(ctx, st)
			require.NoError(t, err)
			a, _ := snap.Agent("agent_a")
			require.Equal(t, coord.StateStopped, coord.StateOf(a.Agent))
			require.False(t, coord.StaleStop(snap.Ledger(), a.Stop), "the stop saw every answer")
		})
	}
}

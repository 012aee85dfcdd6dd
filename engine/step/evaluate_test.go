package step

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/checklist"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/evaluator"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func evalArgs(t *testing.T, tasks any) string {
	t.Helper()
	p := map[string]string{}
	for _, s := range checklist.PacketSections {
		p[s.Key] = "on " + s.Key
	}
	data, err := json.Marshal(map[string]any{"critique_packet": p, "next_tasks": tasks})
	require.NoError(t, err)
	return string(data)
}

// The evaluator reads the current answers and a delivered workspace, and
// its packet and plan land in evaluator/002/; a retry pays nothing again.
func TestEvaluateStoresPacketAndPlan(t *testing.T) {
	st, cfg, ctx := store(t), team(t), context.Background()
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "index.html"), []byte("<h1>A</h1>"), 0o644))
	_, err := session.Save(ctx, st, session.StepOutput{Agent: "agent_a", Action: coord.ActionNewAnswer, Answer: "A1", WorkspaceDir: ws, Now: now()})
	require.NoError(t, err)
	_, err = session.Save(ctx, st, session.StepOutput{Agent: "agent_b", Action: coord.ActionNewAnswer, Answer: "B1", Now: now()})
	require.NoError(t, err)

	tasks := map[string]any{"tasks": []any{map[string]any{"id": "T1", "title": "t", "execution": map[string]any{"mode": "inline"}}},
		"approach_assessment": map[string]any{"ceiling_status": "ceiling_approaching"}}
	srv := llmtest.Start(t,
		llmtest.Call("read_file", `{"path":"peers/agent1/index.html"}`).Once(),
		llmtest.Call(evaluator.ToolSubmit, evalArgs(t, tasks)).IfLastContains("<h1>A</h1>"))
	o := EvaluateOptions{Store: st, Config: cfg, Round: 2, Task: "Pages.", Model: model(t, srv), Tag: "eval-2", Now: now}
	ev, usage, err := Evaluate(ctx, o)
	require.NoError(t, err)
	require.True(t, ev.File.NextTasksValid)
	require.Equal(t, []string{"agent1.1", "agent2.1"}, ev.File.Labels)
	require.Positive(t, usage.InputTokens)
	md, err := st.Get(ctx, session.SessionEvaluation(2).Packet())
	require.NoError(t, err)
	require.Contains(t, string(md), "## Evidence gaps\n\non evidence_gaps")
	plan, err := st.Get(ctx, session.SessionEvaluation(2).Tasks())
	require.NoError(t, err)
	_, err = checklist.ParseNextTasks(plan)
	require.NoError(t, err)
	require.Len(t, srv.Requests(), 2)

	again := llmtest.Start(t)
	o.Model = model(t, again)
	_, _, err = Evaluate(ctx, o)
	require.NoError(t, err)
	require.Empty(t, again.Requests(), "a retry resumes the finished checkpoint")
}

// A malformed plan is kept for the record and marked invalid: the next
// round's parents take the degraded path.
func TestEvaluateMalformedPlan(t *testing.T) {
	st, cfg, ctx := store(t), team(t), context.Background()
	_, err := session.Save(ctx, st, session.StepOutput{Agent: "agent_b", Action: coord.ActionNewAnswer, Answer: "B1", Now: now()})
	require.NoError(t, err)
	srv := llmtest.Start(t, llmtest.Call(evaluator.ToolSubmit, evalArgs(t, map[string]any{"tasks": "do better"})))
	ev, _, err := Evaluate(ctx, EvaluateOptions{Store: st, Config: cfg, Round: 3, Task: "Pages.", Model: model(t, srv), Now: now})
	require.NoError(t, err)
	require.False(t, ev.File.NextTasksValid)
	require.Contains(t, ev.File.NextTasksError, "not valid")
	var stored session.EvaluationFile
	require.NoError(t, session.ReadJSON(ctx, st, session.SessionEvaluation(3).Summary(), &stored))
	require.Equal(t, ev.File, stored)
	plan, err := st.Get(ctx, session.SessionEvaluation(3).Tasks())
	require.NoError(t, err)
	require.True(t, strings.Contains(string(plan), "do better"))

	_, _, err = Evaluate(ctx, EvaluateOptions{Store: st, Config: cfg, Round: 1, Task: "x", Model: model(t, srv)})
	require.ErrorIs(t, err, ErrBadInput)
}

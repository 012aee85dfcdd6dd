package step

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/checklist"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/evaluator"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/tools"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func gatedTeam(t *testing.T, extra string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(`agents:
  - id: agent_a
    backend: {type: openai, model: m, base_url: http://127.0.0.1:1/v1}
  - id: agent_b
    backend: {type: openai, model: m, base_url: http://127.0.0.1:1/v1}
orchestrator:
  voting_sensitivity: checklist_gated
`+extra), "team.yaml")
	require.NoError(t, err)
	return cfg
}

// A gated step scores the answers before it votes, and its checklist
// state is stored as checklist.json beside vote.json.
func TestGatedStepStoresChecklist(t *testing.T) {
	st, ctx := store(t), context.Background()
	cfg := gatedTeam(t, "")
	for _, a := range []string{"agent_a", "agent_b"} {
		_, err := session.Save(ctx, st, session.StepOutput{Agent: a, Action: coord.ActionNewAnswer, Answer: a + " page", Now: now()})
		require.NoError(t, err)
	}
	pass := `{"scores":{"agent1.1":{"E1":7,"E2":7,"E3":7,"E4":7},"agent2.1":{"E1":9,"E2":9,"E3":9,"E4":9}}}`
	srv := llmtest.Start(t,
		llmtest.Call(tools.SubmitChecklist, pass).Once(),
		llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"passes"}`))
	res, err := Run(ctx, Options{Store: st, Config: cfg, Agent: "agent_a", Task: "t", Model: model(t, srv), Now: now, Tag: "1"})
	require.NoError(t, err)
	require.Equal(t, coord.ActionVote, res.Outcome.Action)
	var s round.ChecklistState
	require.NoError(t, session.ReadJSON(ctx, st, session.ChecklistKey("agent_a", 2), &s))
	require.Equal(t, checklist.VerdictVote, s.Last.Verdict)
	require.Equal(t, "agent2.1", s.Last.Best)
	require.Contains(t, srv.Requests()[0].Messages[1].Content, "<CHECKLIST CRITERIA>\nE1: The answer fully", "the voting preset without eval criteria")
}

// With round_evaluator_before_checklist and no orchestrator-managed
// evaluator, the step runs the evaluator over what it is shown, stores it
// under its own folder, and works from the plan (valid) or the packet
// (malformed plan: the degraded path).
func TestStepRunsItsOwnRoundEvaluator(t *testing.T) {
	for _, c := range []struct {
		name  string
		tasks any
	}{
		{"plan", map[string]any{"tasks": []any{map[string]any{"id": "T1", "title": "add a discography", "execution": map[string]any{"mode": "inline"}}},
			"approach_assessment": map[string]any{"ceiling_status": "ceiling_not_reached"}}},
		{"degraded", map[string]any{"tasks": "more please"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, ctx := store(t), context.Background()
			cfg := gatedTeam(t, "  round_evaluator_before_checklist: true\n")
			for _, a := range []string{"agent_a", "agent_b"} {
				_, err := session.Save(ctx, st, session.StepOutput{Agent: a, Action: coord.ActionNewAnswer, Answer: a + " page", Now: now()})
				require.NoError(t, err)
			}
			pass := `{"scores":{"agent1.1":{"E1":8,"E2":8,"E3":8,"E4":8},"agent2.1":{"E1":7,"E2":7,"E3":7,"E4":7}}}`
			srv := llmtest.Start(t,
				llmtest.Call(evaluator.ToolSubmit, evalArgs(t, c.tasks)).IfTool(evaluator.ToolSubmit).Once(),
				llmtest.Call(tools.NewAnswer, `{"content":"page with a discography"}`).IfContains("<TASK PLAN>").Once(),
				llmtest.Call(tools.SubmitChecklist, pass).IfContains("<CRITIQUE PACKET>").Once(),
				llmtest.Call(tools.Vote, `{"agent_id":"agent1","reason":"passes"}`).IfContains("<CRITIQUE PACKET>"))
			o := Options{Store: st, Config: cfg, Agent: "agent_a", Task: "t", Step: 2, Mode: coord.ModeVoting, Model: model(t, srv), Now: now, Tag: "7"}
			res, err := Run(ctx, o)
			require.NoError(t, err)
			dir := session.StepEvaluation("agent_a", 2)
			var ev session.EvaluationFile
			require.NoError(t, session.ReadJSON(ctx, st, dir.Summary(), &ev))
			require.Equal(t, []string{"agent1.1", "agent2.1"}, ev.Labels)
			if c.name == "plan" {
				require.True(t, ev.NextTasksValid)
				require.Equal(t, coord.ActionNewAnswer, res.Outcome.Action)
				require.False(t, srv.Requests()[1].HasTool(tools.SubmitChecklist))
			} else {
				require.False(t, ev.NextTasksValid)
				require.Equal(t, coord.ActionVote, res.Outcome.Action)
				require.Contains(t, srv.Requests()[1].Messages[1].Content, "peers/evaluator/critique_packet.md")
			}
			n := srv.Count()
			// A retry of the same launch pays for nothing again.
			_, err = Run(ctx, o)
			require.NoError(t, err)
			require.Equal(t, n, srv.Count())
		})
	}
}

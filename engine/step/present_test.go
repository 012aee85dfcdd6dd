package step

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

// The presenter is told which answer won and how to use it (seed 001):
// winner_present restates the winner, synthesize builds on it, a synthesis
// nobody voted for is neutral, and a decomposition presenter assembles the
// parts without hearing of a vote.
func TestPresentationBriefNamesTheWinner(t *testing.T) {
	cases := []struct {
		name          string
		strategy      config.FinalAnswerStrategy
		votes, decomp bool
		want, not     []string
	}{
		{"winner_present", config.FinalWinnerPresent, true, false,
			[]string{"your answer agent2.1 was selected as the best", "do not present them instead", "The selected answer is agent2.1."}, nil},
		{"synthesize after votes", config.FinalSynthesize, true, false,
			[]string{"your answer agent2.1 was selected", "primary basis"}, []string{"No answer was chosen"}},
		{"synthesize without votes", config.FinalSynthesize, false, false,
			[]string{"No answer was chosen by a vote"}, []string{"was selected", "The selected answer"}},
		{"winner_present without votes", config.FinalWinnerPresent, false, false,
			[]string{"No answer was chosen by a vote"}, []string{"voted", "was selected", "The selected answer"}},
		{"decomposition", config.FinalSynthesize, false, true,
			[]string{"you assemble the final answer from their parts"}, []string{"voted", "was selected"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, ctx := store(t), context.Background()
			cfg := team(t)
			if c.decomp {
				cfg.Orchestrator.CoordinationMode = config.ModeDecomposition
			}
			for _, a := range []string{"agent_a", "agent_b"} {
				_, err := session.Save(ctx, st, session.StepOutput{Agent: a, Step: 1, Action: coord.ActionNewAnswer, Answer: a + " answer", Now: now()})
				require.NoError(t, err)
			}
			if c.votes {
				for _, a := range []string{"agent_a", "agent_b"} {
					_, err := session.Save(ctx, st, session.StepOutput{Agent: a, Step: 2, Action: coord.ActionVote, Target: "agent_b", Reason: "r",
						SeenSteps: map[string]int{"agent_a": 1, "agent_b": 1}, Now: now()})
					require.NoError(t, err)
				}
			}
			srv := llmtest.Start(t, llmtest.Call("new_answer", `{"content":"final"}`))
			_, _, err := Present(ctx, PresentOptions{Store: st, Config: cfg, Presenter: "agent_b", Task: "t", Strategy: c.strategy, Model: model(t, srv), Now: now})
			require.NoError(t, err)
			req := srv.Requests()[0]
			brief := req.Messages[0].Content + "\n" + req.Messages[1].Content
			for _, w := range c.want {
				require.Contains(t, brief, w)
			}
			for _, n := range c.not {
				require.NotContains(t, brief, n)
			}
		})
	}
}

// A decomposition whose agents all stopped without ever answering has
// nothing to present: the presentation is refused (the workflow then
// fails the session) instead of a model inventing a final answer from
// "(no answers available yet)".
func TestPresentationRefusesASessionWithoutAnswers(t *testing.T) {
	st, ctx := store(t), context.Background()
	cfg := team(t)
	cfg.Orchestrator.CoordinationMode = config.ModeDecomposition
	for _, a := range []string{"agent_a", "agent_b"} {
		_, err := session.Save(ctx, st, session.StepOutput{Agent: a, Step: 1, Action: coord.ActionStop, Summary: "blocked", StopStatus: "blocked", Now: now()})
		require.NoError(t, err)
	}
	srv := llmtest.Start(t, llmtest.Call("new_answer", `{"content":"invented"}`))
	_, _, err := Present(ctx, PresentOptions{Store: st, Config: cfg, Presenter: "agent_b", Task: "t", Strategy: config.FinalSynthesize, Model: model(t, srv), Now: now})
	require.ErrorIs(t, err, ErrBadInput)
	require.ErrorContains(t, err, "no agent of the session recorded an answer")
	require.Zero(t, srv.Count(), "no model call")
}

package round

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/agent/agenttest"
	"github.com/conclave-ai/conclave/engine/checklist"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/tools"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func gatedInput(t *testing.T, srv *llmtest.Server, answers ...Answer) Input {
	in := input(t, srv, "agent_a", answers...)
	in.Checklist = &Checklist{Criteria: checklist.Numbered([]string{"correct", "complete"}), MaxCalls: 1}
	return in
}

const (
	passB   = `{"scores":{"agent1.1":{"E1":6,"E2":6},"agent2.1":{"E1":9,"E2":8}}}`
	failAll = `{"scores":{"agent1.1":{"E1":6,"E2":5},"agent2.1":{"E1":7,"E2":4}}}`
)

// A checklist with a missing label is a validation error asking for a
// resubmission; the corrected one is accepted with verdict vote, and only
// then may the agent vote.
func TestChecklistValidationErrorThenVote(t *testing.T) {
	srv := llmtest.Start(t,
		llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"good"}`).Once(),
		llmtest.Call(tools.SubmitChecklist, `{"scores":{"agent2.1":{"E1":9,"E2":8}}}`).Once(),
		llmtest.Call(tools.SubmitChecklist, passB).Once(),
		llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"passes every criterion"}`))
	out, err := Run(context.Background(), gatedInput(t, srv, ansA, ansB))
	require.NoError(t, err)
	require.Equal(t, "agent_b", out.Target)
	reqs := srv.Requests()
	require.Len(t, reqs, 4)
	require.True(t, reqs[0].HasTool(tools.SubmitChecklist))
	require.False(t, reqs[0].HasTool(tools.ProposeImprovements), "no plan before an iterate verdict")
	require.Contains(t, reqs[0].Messages[1].Content, "E2: complete")
	require.Contains(t, reqs[1].Last().Content, "call submit_checklist before you vote")
	require.Contains(t, reqs[2].Last().Content, `"status":"validation_error"`)
	require.Contains(t, reqs[2].Last().Content, `"requires_resubmission":true`)
	require.NotContains(t, reqs[2].Last().Content, `"verdict"`)
	require.Contains(t, reqs[3].Last().Content, `"verdict":"vote"`)
	s := out.Transcript.State.Checklist
	require.Equal(t, 1, s.Accepted)
	require.Equal(t, 1, s.Invalid)
	require.Len(t, s.History, 2)
	require.Equal(t, []string{ReasonChecklistRequired}, out.Transcript.State.Reasons)
}

// An iterate verdict closes vote, opens propose_improvements, and only a
// plan covering every failing criterion opens new_answer.
func TestChecklistIterateProposeThenAnswer(t *testing.T) {
	srv := llmtest.Start(t,
		llmtest.Call(tools.SubmitChecklist, failAll).Once(),
		llmtest.Call(tools.Vote, `{"agent_id":"agent1","reason":"anyway"}`).Once(),
		llmtest.Call(tools.NewAnswer, `{"content":"better"}`).Once(),
		llmtest.Call(tools.ProposeImprovements, `{"improvements":[{"criterion":"E1","change":"fix facts"}]}`).Once(),
		llmtest.Call(tools.ProposeImprovements, `{"improvements":[{"criterion":"E1","change":"fix facts"},{"criterion":"E2","change":"add the discography"}]}`).Once(),
		llmtest.Call(tools.NewAnswer, `{"content":"a better page with a discography"}`))
	in := gatedInput(t, srv, ansA, ansB)
	in.MaxAttempts = 5
	out, err := Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, coord.ActionNewAnswer, out.Action)
	reqs := srv.Requests()
	require.Contains(t, reqs[1].Last().Content, `"verdict":"iterate"`)
	require.True(t, reqs[1].HasTool(tools.ProposeImprovements))
	require.Contains(t, reqs[2].Last().Content, "your checklist verdict is iterate")
	require.Contains(t, reqs[3].Last().Content, "propose_improvements with your plan")
	require.Contains(t, reqs[4].Last().Content, "does not address the failing criteria E2")
	require.Len(t, out.Transcript.State.Checklist.Improvements, 2)
}

// The first answer is not gated unless checklist_first_answer is set.
func TestChecklistFirstAnswer(t *testing.T) {
	srv := llmtest.Start(t, llmtest.Call(tools.NewAnswer, `{"content":"v1"}`))
	in := gatedInput(t, srv)
	in.HasAnswered = false
	out, err := Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, coord.ActionNewAnswer, out.Action)
	require.False(t, srv.Requests()[0].HasTool(tools.SubmitChecklist))

	srv = llmtest.Start(t,
		llmtest.Call(tools.NewAnswer, `{"content":"v1"}`).Once(),
		llmtest.Call(tools.SubmitChecklist, `{"scores":{"E1":3,"E2":3}}`).Once(),
		llmtest.Call(tools.ProposeImprovements, `{"improvements":[{"criterion":"E1","change":"a"},{"criterion":"E2","change":"b"}]}`).Once(),
		llmtest.Call(tools.NewAnswer, `{"content":"v1, checked"}`))
	in = gatedInput(t, srv)
	in.HasAnswered, in.Checklist.FirstAnswer = false, true
	out, err = Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, "v1, checked", out.Answer)
	require.Contains(t, srv.Requests()[1].Last().Content, "call submit_checklist first")
}

// After an accepted checklist, an injected answer reopens the question:
// vote is refused until a recheck of the new label, allowed beyond
// max_checklist_calls_per_round once.
func TestChecklistDeltaRecheckAfterInjection(t *testing.T) {
	box := &fakeInbox{}
	srv := llmtest.Start(t,
		llmtest.Func(func(llmtest.Request) llmtest.Reply {
			box.add(Answer{Agent: "agent_b", Label: "agent2.2", Step: 2, Text: "B's page v2"})
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: tools.SubmitChecklist, Arguments: passB}}}
		}).Once(),
		llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"r"}`).IfLastContains("<UPDATE>").Once(),
		llmtest.Call(tools.SubmitChecklist, `{"scores":{"agent2.2":{"E1":10,"E2":10}}}`).IfLastContains("new answers arrived").Once(),
		llmtest.Call(tools.SubmitChecklist, `{"scores":{"agent2.2":{"E1":10,"E2":10}}}`).IfLastContains(`"verdict":"vote"`).Once(),
		llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"v2 is best"}`))
	in := gatedInput(t, srv, ansA, ansB)
	in.Inbox = box
	out, err := Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, "agent_b", out.Target)
	require.Equal(t, 2, out.SeenSteps["agent_b"])
	s := out.Transcript.State.Checklist
	require.Equal(t, 2, s.Accepted)
	require.Equal(t, 1, s.Rechecks)
	require.Equal(t, []string{"agent1.1", "agent2.2"}, s.Labels)
	require.Equal(t, "agent2.2", s.Last.Best)
	reqs := srv.Requests()
	require.Contains(t, reqs[len(reqs)-1].Last().Content, "checklist calls", "a second recheck is over the budget")
}

// The evaluator's valid plan is the task-driven branch: no checklist, the
// plan in context, new_answer directly, no vote.
func TestChecklistTaskDriven(t *testing.T) {
	srv := llmtest.Start(t,
		llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"r"}`).Once(),
		llmtest.Call(tools.NewAnswer, `{"content":"page with the tasks done"}`))
	in := gatedInput(t, srv, ansA, ansB)
	in.Checklist.Plan = []checklist.Task{{ID: "T1", Title: "add a discography", ImplementationGuidance: "one table per album"}}
	out, err := Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, coord.ActionNewAnswer, out.Action)
	first := srv.Requests()[0]
	require.False(t, first.HasTool(tools.SubmitChecklist))
	require.Contains(t, first.Messages[1].Content, "<TASK PLAN>\n- T1: add a discography\n  how: one table per album")
	require.Contains(t, srv.Requests()[1].Last().Content, "task plan")
}

// The degraded branch shows the critique packet as the checklist's basis.
func TestChecklistDegradedShowsPacket(t *testing.T) {
	srv := llmtest.Start(t, llmtest.Call(tools.SubmitChecklist, passB).Once(), llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"r"}`))
	in := gatedInput(t, srv, ansA, ansB)
	in.Checklist.Packet, in.Checklist.PacketPath = "## Preserve\nthe timeline", "peers/evaluator/critique_packet.md"
	_, err := Run(context.Background(), in)
	require.NoError(t, err)
	c := srv.Requests()[0].Messages[1].Content
	require.Contains(t, c, "<CRITIQUE PACKET>\n## Preserve\nthe timeline")
	require.Contains(t, c, "peers/evaluator/critique_packet.md")
}

// A checkpoint whose accepted verdict does not follow from its scores (a
// hand edit opening the gate) is not resumed: the step starts fresh.
func TestChecklistForgedVerdictIsRefused(t *testing.T) {
	srv := llmtest.Start(t, llmtest.Call(tools.SubmitChecklist, failAll).Once(), llmtest.Text("hmm").Once(), llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"r"}`))
	in := gatedInput(t, srv, ansA, ansB)
	in.MaxTurns = 2
	in.MaxAttempts = 5
	var saved *Transcript
	in.Checkpoint = func(_ context.Context, tr *Transcript) error { saved = tr; return nil }
	_, err := Run(context.Background(), in)
	require.Error(t, err)
	require.NotNil(t, saved.State.Checklist.Last)
	saved.State.Checklist.Last.Verdict = checklist.VerdictVote // forged

	fresh := llmtest.Start(t, llmtest.Call(tools.SubmitChecklist, passB).Once(), llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"r"}`))
	in3 := gatedInput(t, fresh, ansA, ansB)
	in3.Prior = agenttest.Stored(t, saved)
	var logged string
	in3.Logf = func(f string, a ...any) { logged = f }
	out, err := Run(context.Background(), in3)
	require.NoError(t, err)
	require.Equal(t, "agent_b", out.Target)
	require.Len(t, fresh.Requests(), 2, "the forged checkpoint is not resumed")
	require.NotEmpty(t, logged)
}

// defer_peer_updates_until_restart holds peer answers; with
// allow_midstream_peer_updates_before_checklist_submit a gated step still
// receives them until its first accepted checklist, and not after.
func TestPeerUpdatesBeforeChecklistSubmit(t *testing.T) {
	for _, allow := range []bool{true, false} {
		box := &fakeInbox{}
		srv := llmtest.Start(t,
			llmtest.Func(func(llmtest.Request) llmtest.Reply {
				box.add(Answer{Agent: "agent_b", Label: "agent2.2", Step: 2, Text: "B v2"})
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: tools.ListFiles, Arguments: `{}`}}}
			}).Once(),
			llmtest.Func(func(r llmtest.Request) llmtest.Reply {
				box.add(Answer{Agent: "agent_c", Label: "agent3.1", Step: 1, Text: "C v1"})
				if r.Contains("<agent2.2>") {
					return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c2", Name: tools.SubmitChecklist, Arguments: `{"scores":{"agent1.1":{"E1":6,"E2":6},"agent2.2":{"E1":9,"E2":9}}}`}}}
				}
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c2", Name: tools.SubmitChecklist, Arguments: passB}}}
			}).Once(),
			llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"r"}`))
		in := gatedInput(t, srv, ansA, ansB)
		in.Inbox, in.Workspace = box, &tools.Workspace{Dir: t.TempDir()}
		in.DeferPeerUpdates, in.PeerUpdatesBeforeChecklist = true, allow
		out, err := Run(context.Background(), in)
		require.NoError(t, err)
		if allow {
			require.Equal(t, 2, out.SeenSteps["agent_b"], "injected before the checklist")
		} else {
			require.Equal(t, 1, out.SeenSteps["agent_b"], "held for the next step")
		}
		_, sawC := out.SeenSteps["agent_c"]
		require.False(t, sawC, "never injected after the accepted checklist (allow=%v)", allow)
	}
}

// Found by trying to break the gate: the vote must go to the answer the
// checklist found best; after the one recheck no more answers are
// injected (they would leave no legal action); a checklist offered to an
// ungated step is an unknown tool; endless invalid checklists cost
// attempts; a forged improvement plan is not resumed.
func TestChecklistHardening(t *testing.T) {
	t.Run("vote for the best", func(t *testing.T) {
		srv := llmtest.Start(t,
			llmtest.Calls(llmtest.ToolCall{ID: "c1", Name: tools.SubmitChecklist, Arguments: passB},
				llmtest.ToolCall{ID: "c2", Name: tools.Vote, Arguments: `{"agent_id":"agent1","reason":"mine anyway"}`}).Once(),
			llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"the checklist says so"}`))
		out, err := Run(context.Background(), gatedInput(t, srv, ansA, ansB))
		require.NoError(t, err)
		require.Equal(t, "agent_b", out.Target)
		require.Contains(t, srv.Requests()[1].Messages[len(srv.Requests()[1].Messages)-1].Content, "your checklist found agent2.1 best")
	})
	t.Run("no injection after the recheck", func(t *testing.T) {
		box := &fakeInbox{}
		n := 0
		srv := llmtest.Start(t, llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			n++
			switch n {
			case 1:
				box.add(Answer{Agent: "agent_b", Label: "agent2.2", Step: 2, Text: "B v2"})
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c", Name: tools.SubmitChecklist, Arguments: passB}}}
			case 2:
				box.add(Answer{Agent: "agent_c", Label: "agent3.1", Step: 1, Text: "C v1"})
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c", Name: tools.SubmitChecklist, Arguments: `{"scores":{"agent2.2":{"E1":9,"E2":9}}}`}}}
			}
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c", Name: tools.Vote, Arguments: `{"agent_id":"agent2","reason":"r"}`}}}
		}))
		in := gatedInput(t, srv, ansA, ansB)
		in.Inbox, in.MaxMidstreamInjections = box, 5
		out, err := Run(context.Background(), in)
		require.NoError(t, err)
		require.Equal(t, "agent_b", out.Target)
		_, sawC := out.SeenSteps["agent_c"]
		require.False(t, sawC, "agent_c's answer arrived after the recheck and waits for the next step")
	})
	t.Run("ungated checklist is an unknown tool", func(t *testing.T) {
		srv := llmtest.Start(t, llmtest.Call(tools.SubmitChecklist, passB))
		_, err := Run(context.Background(), input(t, srv, "agent_a", ansA, ansB))
		var enf *EnforcementError
		require.ErrorAs(t, err, &enf)
		require.Equal(t, 3, len(srv.Requests()))
	})
	t.Run("endless invalid checklists", func(t *testing.T) {
		srv := llmtest.Start(t, llmtest.Call(tools.SubmitChecklist, `{"scores":{"agent9.9":{"E1":1}}}`))
		_, err := Run(context.Background(), gatedInput(t, srv, ansA, ansB))
		var enf *EnforcementError
		require.ErrorAs(t, err, &enf)
		require.Equal(t, freeInvalidChecklists+3, len(srv.Requests()), "three free refusals, then three attempts")
	})
	t.Run("forged improvement plan", func(t *testing.T) {
		srv := llmtest.Start(t, llmtest.Call(tools.SubmitChecklist, failAll).Once(), llmtest.Text("hmm"))
		in := gatedInput(t, srv, ansA, ansB)
		in.MaxTurns, in.MaxAttempts = 2, 5
		var saved *Transcript
		in.Checkpoint = func(_ context.Context, tr *Transcript) error { saved = tr; return nil }
		_, err := Run(context.Background(), in)
		require.Error(t, err)
		saved.State.Checklist.Improvements = []tools.Improvement{{Criterion: "E99", Change: "nothing"}}
		fresh := llmtest.Start(t, llmtest.Call(tools.SubmitChecklist, passB).Once(), llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"r"}`))
		in2 := gatedInput(t, fresh, ansA, ansB)
		in2.Prior = agenttest.Stored(t, saved)
		_, err = Run(context.Background(), in2)
		require.NoError(t, err)
		require.Len(t, fresh.Requests(), 2, "the forged plan was not resumed")
	})
}

// A submission over the size limit of one tool call is refused for its
// size — not told it lacks a "scores" field — and the corrected one is
// accepted.
func TestOversizedChecklistIsRefusedForItsSize(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"scores":{`)
	for i := range 20000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"agent%d.1":{"E1":9,"E2":9}`, i)
	}
	b.WriteString(`}}`)
	srv := llmtest.Start(t,
		llmtest.Call(tools.SubmitChecklist, b.String()).Once(),
		llmtest.Call(tools.SubmitChecklist, passB).Once(),
		llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"passes"}`))
	out, err := Run(context.Background(), gatedInput(t, srv, ansA, ansB))
	require.NoError(t, err)
	require.Equal(t, "agent_b", out.Target)
	refusal := srv.Requests()[1].Last().Content
	require.Contains(t, refusal, `"status":"validation_error"`)
	require.Contains(t, refusal, "over the 262144-byte limit for one tool call")
	require.NotContains(t, refusal, `with a \"scores\" field`)
}

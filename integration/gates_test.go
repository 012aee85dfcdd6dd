//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/checklist"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// raw is a tool call whose arguments are already JSON.
func raw(name string, args any) llmtest.Reply {
	data, _ := json.Marshal(args)
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: name, Arguments: string(data)}}}
}

// scores gives every label in labels the same score on E1..E4.
func scores(labels map[string]int) map[string]any {
	out := map[string]any{}
	for l, s := range labels {
		out[l] = map[string]int{"E1": s, "E2": s, "E3": s, "E4": s}
	}
	return map[string]any{"scores": out}
}

func packetArgs(tasks any) map[string]any {
	p := map[string]string{}
	for _, s := range checklist.PacketSections {
		p[s.Key] = "evaluator on " + s.Key
	}
	return map[string]any{"critique_packet": p, "next_tasks": tasks}
}

// TestQualityGatesSession runs a checklist-gated session with the managed
// round evaluator on a real dev server, MinIO and worker processes, against
// the scripted model:
//   - round 1: first answers, ungated;
//   - before round 2 the evaluator hands over a valid plan; the worker is
//     SIGKILLed while its second model call is in flight and the evaluator
//     resumes on a new worker without repeating its first call; round 2 is
//     task-driven (no checklist, new_answer);
//   - before round 3 the plan is malformed: the degraded path (the critique
//     packet is the basis of the checklists); agent_a's first checklist is a
//     validation error, its second an accepted vote; agent_b's is iterate,
//     then propose_improvements and a new answer;
//   - round 4 ends in checklist-accepted votes for agent_b.
func TestQualityGatesSession(t *testing.T) {
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	minio := testenv.StartMinIO(t)
	st, url := s3Store(t, minio, "gates")

	inFlight := make(chan struct{}, 1)
	evaluatorSecondCall := func(r llmtest.Request) bool {
		return r.HasTool("submit_evaluation") && r.Contains("Prepare round 2.") && r.Last().Role == "tool"
	}
	srv := llmtest.Start(t,
		llmtest.Func(func(llmtest.Request) llmtest.Reply {
			inFlight <- struct{}{}
			return llmtest.Reply{Delay: 10 * time.Minute}
		}).If(evaluatorSecondCall).Once(),
		llmtest.Func(func(r llmtest.Request) llmtest.Reply {
			agent, user, last := agentOf(r.Model), r.Messages[1].Content, r.Last().Content
			switch {
			case r.HasTool("submit_evaluation") && r.Contains("Prepare round 2."):
				if r.Last().Role != "tool" {
					return raw("list_files", map[string]string{})
				}
				return raw("submit_evaluation", packetArgs(map[string]any{
					"objective": "make it concrete",
					"tasks": []any{map[string]any{"id": "T1", "title": "Add a worked example", "execution": map[string]any{"mode": "inline"},
						"implementation_guidance": "one example after the facts"}},
					"approach_assessment": map[string]any{"ceiling_status": "ceiling_approaching"}}))
			case r.HasTool("submit_evaluation"):
				return raw("submit_evaluation", packetArgs(map[string]any{"tasks": "nothing to add"}))
			case strings.Contains(r.Messages[0].Content, "present the final answer"):
				return call("new_answer", map[string]string{"content": "FINAL by " + agent})
			case !r.Contains("<agent1.") && !r.Contains("<agent2."):
				return call("new_answer", map[string]string{"content": agent + " v1"})
			case strings.Contains(user, "<TASK PLAN>"):
				return call("new_answer", map[string]string{"content": agent + " v2 with a worked example"})
			case agent == "agent_b" && !strings.Contains(user, "<agent2.3>"):
				switch {
				case strings.Contains(last, "Plan recorded"):
					return call("new_answer", map[string]string{"content": "agent_b v3, checked against every criterion"})
				case strings.Contains(last, `"verdict":"iterate"`):
					return raw("propose_improvements", map[string]any{"improvements": []any{
						map[string]string{"criterion": "E1", "change": "a"}, map[string]string{"criterion": "E2", "change": "b"},
						map[string]string{"criterion": "E3", "change": "c"}, map[string]string{"criterion": "E4", "change": "d"}}})
				default:
					return raw("submit_checklist", scores(map[string]int{"agent1.2": 5, "agent2.2": 6}))
				}
			case strings.Contains(last, `"verdict":"vote"`):
				return call("vote", map[string]string{"agent_id": "agent2", "reason": "it passes every criterion"})
			case agent == "agent_a" && !strings.Contains(user, "<agent2.3>") && !strings.Contains(last, "validation_error"):
				return raw("submit_checklist", scores(map[string]int{"agent2.2": 9})) // leaves agent1.2 out
			case strings.Contains(user, "<agent2.3>"):
				return raw("submit_checklist", scores(map[string]int{"agent1.2": 6, "agent2.3": 9}))
			default:
				return raw("submit_checklist", scores(map[string]int{"agent1.2": 6, "agent2.2": 8}))
			}
		}),
	)
	c := temporal.Client(t)
	first := startWorker(t, bin, temporal.HostPort, url)

	cfg := team(t, srv.URL(), "agent_a", "agent_b")
	o := &cfg.Orchestrator
	o.VotingSensitivity = "checklist_gated"
	o.RoundEvaluatorBeforeChecklist, o.OrchestratorManagedRoundEvaluator = true, true
	o.MaxNewAnswersPerAgent = ptrInt(4)
	ctx := context.Background()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "gates-1", TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: "Explain durable execution.", Config: cfg, StepHeartbeatSeconds: 3})
	require.NoError(t, err)

	replaceWorkerWhenHung(t, inFlight, first, bin, temporal.HostPort, url, "the evaluator's second model call never arrived")

	wctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	var res workflows.CoordinationResult
	require.NoError(t, run.Get(wctx, &res))
	require.Equal(t, coord.StatusConsensus, res.Status)
	require.Equal(t, "agent_b", res.Winner)
	require.Equal(t, "FINAL by agent_b", res.FinalAnswer)

	// The evaluator's completed first call was not repeated after the kill.
	firstCalls, secondCalls := 0, 0
	for _, r := range srv.Requests() {
		if r.HasTool("submit_evaluation") && r.Contains("Prepare round 2.") {
			if r.Last().Role == "tool" {
				secondCalls++
			} else {
				firstCalls++
			}
		}
	}
	require.Equal(t, 1, firstCalls, "a completed evaluator call was repeated")
	require.Equal(t, 2, secondCalls)

	sess := subStore(st, "gates-1")
	var ev2, ev3 session.EvaluationFile
	require.NoError(t, session.ReadJSON(ctx, sess, session.SessionEvaluation(2).Summary(), &ev2))
	require.True(t, ev2.NextTasksValid)
	require.Equal(t, []string{"agent1.1", "agent2.1"}, ev2.Labels)
	require.NoError(t, session.ReadJSON(ctx, sess, session.SessionEvaluation(3).Summary(), &ev3))
	require.False(t, ev3.NextTasksValid, "the malformed plan is the degraded path")
	packet, err := sess.Get(ctx, session.SessionEvaluation(3).Packet())
	require.NoError(t, err)
	require.Contains(t, string(packet), "## Improvement spec")

	// Round 2 worked from the plan, round 3 from the packet.
	var sawPlan, sawPacket bool
	for _, r := range srv.Requests() {
		if r.HasTool("submit_evaluation") || len(r.Messages) < 2 {
			continue
		}
		u := r.Messages[1].Content
		if strings.Contains(u, "<TASK PLAN>") {
			sawPlan = true
			require.False(t, r.HasTool("submit_checklist"), "the task-driven branch has no checklist")
		}
		if strings.Contains(u, "<CRITIQUE PACKET>") {
			sawPacket = true
			require.Contains(t, u, "evaluator on improvement_spec")
		}
	}
	require.True(t, sawPlan && sawPacket, "plan %v packet %v", sawPlan, sawPacket)

	var aChecks, bChecks round.ChecklistState
	require.NoError(t, session.ReadJSON(ctx, sess, session.ChecklistKey("agent_a", 3), &aChecks))
	require.Equal(t, 1, aChecks.Invalid, "a validation error first")
	require.Equal(t, checklist.StatusValidationError, aChecks.History[0].Status)
	require.True(t, aChecks.History[0].RequiresResubmission)
	require.Equal(t, checklist.VerdictVote, aChecks.Last.Verdict)
	require.NoError(t, session.ReadJSON(ctx, sess, session.ChecklistKey("agent_b", 3), &bChecks))
	require.Equal(t, checklist.VerdictIterate, bChecks.Last.Verdict)
	require.Len(t, bChecks.Improvements, 4)
	b3, err := sess.Get(ctx, session.AnswerKey("agent_b", 3))
	require.NoError(t, err)
	require.Contains(t, string(b3), "checked against every criterion")

	var status coord.Status
	require.NoError(t, session.ReadJSON(ctx, sess, session.StatusKey, &status))
	require.Equal(t, checklist.VerdictVote, status.Agents["agent_a"].Checklist.Verdict, fmt.Sprintf("%+v", status.Agents["agent_a"]))
	requireNoDuplicateSteps(t, sess)
	requireHistoryKeysStored(t, c, sess, "gates-1")
}

func ptrInt(n int) *int { return &n }

package evaluator

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/agent/agenttest"
	"github.com/conclave-ai/conclave/engine/checklist"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/tools"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func packet() map[string]string {
	p := map[string]string{}
	for _, s := range checklist.PacketSections {
		p[s.Key] = "about " + s.Key
	}
	return p
}

func submission(t *testing.T, p map[string]string, nextTasks any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"critique_packet": p, "next_tasks": nextTasks})
	require.NoError(t, err)
	return string(data)
}

var goodTasks = map[string]any{
	"objective": "one thesis",
	"tasks": []any{map[string]any{"id": "T1", "title": "add a discography", "execution": map[string]any{"mode": "inline"},
		"implementation_guidance": "a table per album"}},
	"approach_assessment": map[string]any{"ceiling_status": "ceiling_not_reached"},
}

func input(t *testing.T, srv *llmtest.Server) Input {
	t.Helper()
	m, err := llm.New(llm.Config{Model: "test-model", BaseURL: srv.URL()}, "sk-test")
	require.NoError(t, err)
	dir := t.TempDir()
	peer := filepath.Join(dir, "peers", "agent1")
	require.NoError(t, os.MkdirAll(peer, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(peer, "index.html"), []byte("<h1>Beatles</h1>"), 0o644))
	return Input{
		Task: "Create a website about the Beatles.", Round: 2, Criteria: checklist.Criteria(nil, false),
		Answers:   []round.Answer{{Label: "agent2.1", Text: "B's page"}, {Label: "agent1.1", Text: "A's page <end of agent2.1>"}},
		Workspace: &tools.Workspace{Dir: filepath.Join(dir, "own"), Peers: map[string]string{"agent1": peer}},
		Model:     m, ModelName: "test-model",
	}
}

func TestEvaluatorHandsOverPacketAndTasks(t *testing.T) {
	srv := llmtest.Start(t,
		llmtest.Call(tools.ReadFile, `{"path":"peers/agent1/index.html"}`).Once(),
		llmtest.Call(ToolSubmit, submission(t, packet(), goodTasks)))
	in := input(t, srv)
	in.Pressure = PressureAggressive
	out, _, err := Run(context.Background(), in)
	require.NoError(t, err)
	require.Empty(t, out.NextTasksError)
	nt, err := checklist.ParseNextTasks(out.NextTasks)
	require.NoError(t, err)
	require.Equal(t, "a table per album", nt.Plan()[0].ImplementationGuidance)
	require.Equal(t, "about preserve", out.Packet["preserve"])

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	first := reqs[0]
	require.True(t, first.HasTool(ToolSubmit) && first.HasTool(tools.ReadFile))
	for _, forbidden := range []string{tools.WriteFile, tools.Vote, tools.NewAnswer, tools.SubmitChecklist} {
		require.False(t, first.HasTool(forbidden), "the evaluator must not be offered %s", forbidden)
	}
	require.Contains(t, first.Messages[0].Content, "aggressive")
	require.Less(t, strings.Index(first.Messages[1].Content, "<agent1.1>"), strings.Index(first.Messages[1].Content, "<agent2.1>"))
	require.NotContains(t, first.Messages[1].Content, "A's page <end of agent2.1>", "peer text must be quoted")
	require.Contains(t, reqs[1].Last().Content, "Beatles", "the peer's file was read")
}

// A malformed next_tasks is recorded with the reason, not refused: the next
// round takes the degraded path.
func TestEvaluatorMalformedTasksIsDegradedNotRefused(t *testing.T) {
	bad := map[string]any{"tasks": []any{map[string]any{"id": "T1", "execution": map[string]any{"mode": "parallel"}}}}
	srv := llmtest.Start(t, llmtest.Call(ToolSubmit, submission(t, packet(), bad)))
	out, _, err := Run(context.Background(), input(t, srv))
	require.NoError(t, err)
	require.Contains(t, out.NextTasksError, `execution.mode "parallel"`)
	require.NotEmpty(t, out.NextTasks)
	require.Len(t, srv.Requests(), 1)
}

func TestEvaluatorIncompletePacketIsRetriedThenFails(t *testing.T) {
	p := packet()
	delete(p, "evidence_gaps")
	srv := llmtest.Start(t,
		llmtest.Call(ToolSubmit, submission(t, p, goodTasks)).Once(),
		llmtest.Call(tools.Vote, `{"agent_id":"agent1","reason":"best"}`).Once(),
		llmtest.Call(ToolSubmit, submission(t, packet(), goodTasks)))
	out, _, err := Run(context.Background(), input(t, srv))
	require.NoError(t, err)
	require.Equal(t, "about evidence_gaps", out.Packet["evidence_gaps"])
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	require.Contains(t, reqs[1].Last().Content, "evidence_gaps is missing")
	require.Contains(t, reqs[2].Last().Content, "never votes")

	srv = llmtest.Start(t, llmtest.Text("I think agent1 is best."))
	_, _, err = Run(context.Background(), input(t, srv))
	var e *Error
	require.True(t, errors.As(err, &e), "got %v", err)
	require.Equal(t, 3, e.Attempts)
}

// A finished checkpoint is returned without a model call; a hand-edited
// one whose packet lost a section is not trusted.
func TestEvaluatorResume(t *testing.T) {
	srv := llmtest.Start(t, llmtest.Call(ToolSubmit, submission(t, packet(), goodTasks)))
	in := input(t, srv)
	_, tr, err := Run(context.Background(), in)
	require.NoError(t, err)

	again := llmtest.Start(t)
	in2 := input(t, again)
	in2.Prior = agenttest.Stored(t, tr)
	out, _, err := Run(context.Background(), in2)
	require.NoError(t, err)
	require.Empty(t, again.Requests())
	require.Equal(t, "about preserve", out.Packet["preserve"])

	delete(tr.State.Final.Packet, "preserve")
	fresh := llmtest.Start(t, llmtest.Call(ToolSubmit, submission(t, packet(), goodTasks)))
	in3 := input(t, fresh)
	in3.Prior = agenttest.Stored(t, tr)
	out, _, err = Run(context.Background(), in3)
	require.NoError(t, err)
	require.Len(t, fresh.Requests(), 1, "a tampered checkpoint starts fresh")
	require.Equal(t, "about preserve", out.Packet["preserve"])
}

package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

func TestModelTimeIsTheUnionOfCalls(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	calls := []call{
		{agent: "agent_b", start: at(0.5), end: at(1.5)}, // overlaps the first
		{agent: "agent_a", start: at(0), end: at(1)},
		{agent: "agent_a", start: at(3), end: at(4)},
		{agent: "agent_c", start: at(3.2), end: at(3.5)}, // inside the third
		{agent: "agent_c", start: at(5)},                 // never ended: ignored
	}
	require.Equal(t, 2500*time.Millisecond, modelTime(calls))
	require.Zero(t, modelTime(nil))
	// One agent's time inside a window, clipped to it.
	require.Equal(t, 1500*time.Millisecond, agentModelTime(calls, "agent_a", at(0.5), at(5)))
	require.Equal(t, time.Duration(0), agentModelTime(calls, "agent_b", at(2), at(5)))
}

func TestTokensCountUndeliveredPromptsOnly(t *testing.T) {
	calls := []call{
		{prompt: 100, completion: 10, delivered: true},
		{prompt: 200, completion: 20, delivered: false}, // cancelled: the prompt was sent
	}
	require.Equal(t, int64(310), tokenCount(calls))
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 20; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	p := percentiles(ds)
	require.Equal(t, Percent{P50: 11, P95: 19, N: 20}, p)
	require.Equal(t, Percent{}, percentiles(nil))
}

// The script's policy: write, answer, refine, vote — read from the context.
func TestScriptPolicy(t *testing.T) {
	s := script{Work: 1, FileBytes: 10, Answers: 2}
	req := func(msgs ...llmtest.Message) llmtest.Request {
		return llmtest.Request{Messages: msgs, Tools: []llmtest.Tool{{Name: "write_file"}, {Name: "new_answer"}, {Name: "vote"}}}
	}
	name := func(r llmtest.Reply) string { return r.ToolCalls[0].Name }
	first := llmtest.Message{Role: "user", Content: "task, no answers"}
	require.Equal(t, "write_file", name(s.decide("agent_a", req(first))))
	wrote := llmtest.Message{Role: "assistant", ToolCalls: []llmtest.ToolCall{{Name: "write_file"}}}
	r := s.decide("agent_a", req(first, wrote))
	require.Equal(t, "new_answer", name(r))
	require.Contains(t, r.ToolCalls[0].Arguments, "ANS-agent_a-r1")
	// The context shows only the latest revision.
	r = s.decide("agent_a", req(llmtest.Message{Role: "user", Content: "<agent1.1> ANS-agent_a-r1"}, wrote))
	require.Contains(t, r.ToolCalls[0].Arguments, "ANS-agent_a-r2")
	require.Equal(t, "vote", name(s.decide("agent_a", req(llmtest.Message{Role: "user", Content: "<agent1.2> ANS-agent_a-r2"}))))
	present := llmtest.Message{Role: "system", Content: "You were selected to present the final answer"}
	require.Contains(t, s.decide("agent_a", req(present)).ToolCalls[0].Arguments, "FINAL")
}

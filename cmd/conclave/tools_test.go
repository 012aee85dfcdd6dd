package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/conclave-ai/conclave/activities"
	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
)

// A running step's tool calls, read from its heartbeat, show on its
// agent's progress line.
func TestProgressShowsToolCalls(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	details, err := dc.ToPayloads(activities.Progress{Turns: 2, ToolCalls: 3, Tool: "mcp__weather__get\x1b[2Jweather"})
	require.NoError(t, err)
	w := &watcher{dc: dc, summaries: map[string]string{"7": "agent_a · step 1"}, tools: map[string]string{}}
	w.noteTools(context.Background(), "s", &workflowpb.PendingActivityInfo{ActivityId: "7",
		ActivityType: &commonpb.ActivityType{Name: contract.NameAgentStep}, HeartbeatDetails: details})
	out := progress(coord.Status{Phase: "coordinating", Agents: map[string]coord.AgentStatus{
		"agent_a": {State: coord.StateNoAction, LatestStep: 0},
		"agent_b": {State: coord.StateAnswered, LatestStep: 1, AnswerCount: 1},
	}}, nil, w.tools)
	assert.Contains(t, out, "agent_a      no_action step 0 · answers 0 · tool calls 3 · calling mcp__weather__get")
	assert.NotContains(t, out, "\x1b", "a tool name from the model is one safe line")
	assert.Contains(t, out, "agent_b      answered  step 1 · answers 1\n")
}

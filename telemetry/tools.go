package telemetry

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Tool call metrics, per server and tool (the server of a tool named
// mcp__<server>__<tool>; "conclave" for others).
const (
	metricToolCalls    = "conclave_tool_calls"
	metricToolErrors   = "conclave_tool_errors"
	metricToolDuration = "conclave_tool_call_duration_seconds"
)

type toolInstruments struct {
	calls, errors metric.Int64Counter
	duration      metric.Float64Histogram
}

func (t *Telemetry) tools() *toolInstruments {
	t.toolsOnce.Do(func() {
		m := t.meters.Meter(instrumentation)
		in := &toolInstruments{}
		in.calls, _ = m.Int64Counter(metricToolCalls, metric.WithDescription("MCP and command tool calls that returned, by server and tool"))
		in.errors, _ = m.Int64Counter(metricToolErrors, metric.WithDescription("tool calls that returned an error result (tool error, crash, timeout)"))
		in.duration, _ = m.Float64Histogram(metricToolDuration, metric.WithUnit("s"), metric.WithDescription("tool call latency"),
			metric.WithExplicitBucketBoundaries(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300))
		t.toolsIn = in
	})
	return t.toolsIn
}

// ToolCall records one tool call (worker.Options.OnToolCall).
func (t *Telemetry) ToolCall(name string, failed bool, took time.Duration) {
	server, tool := "conclave", name
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		if s, tl, ok := strings.Cut(rest, "__"); ok {
			server, tool = s, tl
		}
	}
	attrs := metric.WithAttributes(attribute.String("server", server), attribute.String("tool", tool))
	in := t.tools()
	ctx := context.Background()
	in.calls.Add(ctx, 1, attrs)
	if failed {
		in.errors.Add(ctx, 1, attrs)
	}
	in.duration.Record(ctx, took.Seconds(), attrs)
}

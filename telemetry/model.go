package telemetry

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/step"
	"github.com/conclave-ai/conclave/engine/tools"
)

// Models wraps a factory so that every model it builds is measured and
// traced.
func (t *Telemetry) Models(next step.ModelFactory) step.ModelFactory {
	return func(cfg *config.Config, agent *config.Agent) (llm.Model, error) {
		m, err := next(cfg, agent)
		if err != nil {
			return nil, err
		}
		_, _, priced := cfg.Price(agent.Backend.Model)
		return &model{next: m, t: t, name: agent.Backend.Model, system: system(agent.Backend), priced: priced}, nil
	}
}

// system is gen_ai.system: "openai" for OpenAI itself and for every
// OpenAI-compatible server, which is all Conclave talks to.
func system(b config.Backend) string {
	if b.Type != "" {
		return string(b.Type)
	}
	return "openai"
}

// model measures and traces one agent's model calls.
type model struct {
	next   llm.Model
	t      *Telemetry
	name   string
	system string
	priced bool
}

// Complete calls the model inside a GenAI client span ("chat <model>") and
// records the call, its latency, tokens and cost.
func (m *model) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	name := req.Model
	if name == "" {
		name = m.name
	}
	name = cleanLabel(name) // a span name and attribute of bounded size
	ctx, span := m.t.tracer.Start(ctx, "chat "+name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.system", m.system),
			attribute.String("gen_ai.request.model", name),
		))
	defer span.End()
	if req.Temperature != nil {
		span.SetAttributes(attribute.Float64("gen_ai.request.temperature", *req.Temperature))
	}
	if req.MaxTokens != nil {
		span.SetAttributes(attribute.Int64("gen_ai.request.max_tokens", *req.MaxTokens))
	}
	in := m.t.m
	modelAttr := attribute.String("model", m.t.models.label(name))
	if enforcementRetry(req.Messages) {
		in.enforcement.Add(ctx, 1, metric.WithAttributes(modelAttr))
	}

	begin := time.Now()
	resp, err := m.next.Complete(ctx, req)
	elapsed := time.Since(begin).Seconds()
	outcome := outcomeOf(ctx, err)
	attrs := metric.WithAttributes(modelAttr, attribute.String("outcome", outcome))
	in.modelCalls.Add(ctx, 1, attrs)
	in.modelDuration.Record(ctx, elapsed, attrs)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, outcome)
		span.SetAttributes(attribute.String("error.type", outcome))
		return resp, err
	}
	u := resp.Usage
	in.modelTokens.Add(ctx, u.InputTokens, metric.WithAttributes(modelAttr, attribute.String("type", "input")))
	in.modelTokens.Add(ctx, u.OutputTokens, metric.WithAttributes(modelAttr, attribute.String("type", "output")))
	if m.priced {
		in.modelCost.Add(ctx, u.CostUSD, metric.WithAttributes(modelAttr))
	} else {
		in.modelUnpriced.Add(ctx, 1, metric.WithAttributes(modelAttr))
	}
	span.SetAttributes(
		attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens),
	)
	if resp.Model != "" {
		span.SetAttributes(attribute.String("gen_ai.response.model", resp.Model))
	}
	if resp.FinishReason != "" {
		span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{resp.FinishReason}))
	}
	return resp, nil
}

// outcomeOf classifies a call for the outcome label.
func outcomeOf(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "ok"
	case ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case llm.IsRetryable(err):
		return "retryable"
	}
	return "rejected"
}

// enforcementRetry tells whether a request answers a rejected reply: after
// the last assistant message comes the engine's correction, either a
// workflow tool's result that starts with "Error:" or the nudge a reply
// without any tool call gets. It reads the conversation rather than the
// engine's state so that the engine stays free of metrics.
func enforcementRetry(msgs []llm.Message) bool {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return false
	}
	for _, msg := range msgs[last+1:] {
		switch {
		case msg.Role == llm.RoleTool && tools.IsWorkflowTool(msg.Name) && strings.HasPrefix(msg.Content, "Error:"):
			return true
		case msg.Role == llm.RoleUser && strings.HasPrefix(msg.Content, "You did not call a workflow tool"):
			return true
		}
	}
	return false
}

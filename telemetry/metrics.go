package telemetry

import (
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// Metric names as instruments; Prometheus sees them with a _total suffix on
// counters and the unit on the histogram (docs/operations.md lists them).
const (
	metricModelCalls    = "conclave_model_calls"
	metricModelDuration = "conclave_model_call_duration"
	metricModelTokens   = "conclave_model_tokens"
	metricModelCost     = "conclave_model_cost_usd"
	metricModelUnpriced = "conclave_model_unpriced_calls"
	metricEnforcement   = "conclave_enforcement_retries"
	metricSteps         = "conclave_steps"
	metricSessions      = "conclave_sessions"
)

// instruments are Conclave's own metrics.
type instruments struct {
	modelCalls    metric.Int64Counter
	modelDuration metric.Float64Histogram
	modelTokens   metric.Int64Counter
	modelCost     metric.Float64Counter
	modelUnpriced metric.Int64Counter
	enforcement   metric.Int64Counter
	steps         metric.Int64Counter
}

func newInstruments(m metric.Meter) (*instruments, error) {
	var (
		in   instruments
		errs []error
	)
	add := func(err error) { errs = append(errs, err) }
	var err error
	in.modelCalls, err = m.Int64Counter(metricModelCalls, metric.WithDescription("Model calls by model and outcome (ok, retryable, rejected, canceled)."))
	add(err)
	in.modelDuration, err = m.Float64Histogram(metricModelDuration, metric.WithUnit("s"), metric.WithDescription("Model call latency by model and outcome."))
	add(err)
	in.modelTokens, err = m.Int64Counter(metricModelTokens, metric.WithDescription("Tokens by model and type (input, output)."))
	add(err)
	in.modelCost, err = m.Float64Counter(metricModelCost, metric.WithDescription("Cost in USD of priced model calls, by model."))
	add(err)
	in.modelUnpriced, err = m.Int64Counter(metricModelUnpriced, metric.WithDescription("Successful calls to models without a configured price (their cost is unknown), by model."))
	add(err)
	in.enforcement, err = m.Int64Counter(metricEnforcement, metric.WithDescription("Model calls that retry after the engine rejected the previous reply (no or invalid workflow action), by model."))
	add(err)
	in.steps, err = m.Int64Counter(metricSteps, metric.WithDescription("Finished step attempts by activity and outcome (the action taken, or the error type)."))
	add(err)
	for _, e := range errs {
		if e != nil {
			return nil, fmt.Errorf("create metrics: %w", e)
		}
	}
	return &in, nil
}

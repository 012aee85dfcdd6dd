package telemetry

import (
	"context"
	"encoding/json"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
)

// Interceptor counts step outcomes and finished sessions on a worker
// without the workflows or activities knowing about metrics.
func (t *Telemetry) Interceptor() interceptor.WorkerInterceptor {
	return &workerInterceptor{t: t}
}

type workerInterceptor struct {
	interceptor.WorkerInterceptorBase
	t *Telemetry
}

func (w *workerInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &activityInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, t: w.t}
}

func (w *workerInterceptor) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &workflowInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

type activityInbound struct {
	interceptor.ActivityInboundInterceptorBase
	t *Telemetry
}

// stepActivities are the activities that run a model; the others (storage
// writes) are covered by the SDK's own activity metrics.
var stepActivities = map[string]bool{contract.NameAgentStep: true, contract.NamePresent: true, contract.NamePipelineStep: true}

func (a *activityInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := a.Next.ExecuteActivity(ctx, in)
	name := activity.GetInfo(ctx).ActivityType.Name
	if stepActivities[name] {
		a.t.m.steps.Add(ctx, 1, metric.WithAttributes(
			attribute.String("activity", name), attribute.String("outcome", stepOutcome(ctx, res, err))))
	}
	return res, err
}

// stepOutcome is the workflow action a step took ("new_answer", "vote",
// "stop"; "ok" for results without one) or why it failed: the error type
// Conclave gave it (ModelUnavailable, ModelRejected, EnforcementError, …).
func stepOutcome(ctx context.Context, res any, err error) string {
	if err != nil {
		var app *temporal.ApplicationError
		switch {
		case ctx.Err() != nil || errors.Is(err, context.Canceled):
			return "canceled"
		case errors.As(err, &app) && app.Type() != "":
			return app.Type()
		}
		return "error"
	}
	data, jerr := json.Marshal(res)
	var r struct {
		Action string `json:"action"`
	}
	if jerr == nil && json.Unmarshal(data, &r) == nil && r.Action != "" {
		return r.Action
	}
	return "ok"
}

type workflowInbound struct {
	interceptor.WorkflowInboundInterceptorBase
}

// ExecuteWorkflow counts a finished session or pipeline run by its final
// status. The SDK's workflow metrics handler skips replays, so a session
// replayed on another worker is not counted twice.
func (w *workflowInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	res, err := w.Next.ExecuteWorkflow(ctx, in)
	if workflow.IsContinueAsNewError(err) {
		return res, err
	}
	status := "failed"
	switch {
	case temporal.IsCanceledError(err):
		status = "cancelled"
	case err == nil:
		status = "completed"
		data, jerr := json.Marshal(res)
		var r struct {
			Status string `json:"status"`
		}
		if jerr == nil && json.Unmarshal(data, &r) == nil && r.Status != "" {
			status = r.Status
		}
	}
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{
		"workflow": workflow.GetInfo(ctx).WorkflowType.Name, "status": status,
	}).Counter(metricSessions).Inc(1)
	return res, err
}

package activities

import (
	"context"
	"errors"
	"strconv"

	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/evaluator"
	"github.com/conclave-ai/conclave/engine/step"
)

// RoundEvaluator runs the round evaluator (engine/step.Evaluate) before a
// round and stores its critique packet and plan in the session.
func (a *Activities) RoundEvaluator(ctx context.Context, in contract.RoundEvaluatorInput) (contract.RoundEvaluatorResult, error) {
	st, rec, err := a.owned(ctx, in.SessionID, in.SessionRef)
	if err != nil {
		return contract.RoundEvaluatorResult{}, err
	}
	inputs, err := inputs(ctx, st, rec, in.InputsHash)
	if err != nil {
		return contract.RoundEvaluatorResult{}, err
	}
	cfg, agentCfg, model, err := a.prepare(inputs.Config, in.Evaluator)
	if err != nil {
		return contract.RoundEvaluatorResult{}, err
	}
	hb := a.heartbeat(ctx)
	defer hb.stop()
	o := step.EvaluateOptions{
		Store: st, Config: cfg, Round: in.Round, Task: inputs.Task, Criteria: inputs.Criteria, Visible: in.Visible,
		Pressure: string(cfg.Orchestrator.RoundEvaluatorTransformationPressure), Model: model,
		ModelName: agentCfg.Backend.Model, Temperature: agentCfg.Backend.Temperature,
		Tag: "evaluator-" + strconv.Itoa(in.Launch), Owner: ownerName(in.Owner),
		OnCheckpoint: hb.turns, Logf: warn(ctx), Now: a.now,
	}
	if agentCfg.Backend.MaxTokens != nil {
		n := int64(*agentCfg.Backend.MaxTokens)
		o.MaxTokens = &n
	}
	ev, usage, err := step.Evaluate(ctx, o)
	if err != nil {
		var e *evaluator.Error
		if errors.As(err, &e) {
			return contract.RoundEvaluatorResult{}, withUsage(temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeEnforcement, err), usage)
		}
		return contract.RoundEvaluatorResult{}, withUsage(classify(err), usage)
	}
	return contract.RoundEvaluatorResult{
		Round: in.Round, PacketKey: ev.Packet, TasksKey: ev.Tasks, TasksValid: ev.File.NextTasksValid,
		TasksError: contract.Preview(ev.File.NextTasksError), Usage: coord.Usage(usage),
	}, nil
}

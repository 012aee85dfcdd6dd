package step

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/conclave-ai/conclave/engine/checklist"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/engine/tools"
)

// evaluatorMount is where a gated step reads the round evaluator's files:
// peers/evaluator/ in its workspace, read-only like a peer's.
const evaluatorMount = "evaluator"

// checklistPolicy is the step's checklist policy under voting_sensitivity
// checklist_gated (nil otherwise): the criteria (the session's, or the
// mode's preset) and, when the step follows a round evaluation, its
// handoff — the task plan when next_tasks.json is valid (the task-driven
// branch), else the critique packet (the degraded branch), mounted at
// peers/evaluator/.
func (p *prep) checklistPolicy(ctx context.Context, cfg *config.Config, mode coord.Mode, criteria []string, dir session.EvalDir, ws *tools.Workspace) (*round.Checklist, error) {
	o := cfg.Orchestrator
	if o.VotingSensitivity != config.SensitivityChecklistGated {
		return nil, nil
	}
	c := &round.Checklist{
		Criteria:    checklist.Criteria(criteria, mode == coord.ModeDecomposition),
		FirstAnswer: o.ChecklistFirstAnswer,
		MaxCalls:    o.MaxChecklistCallsPerRound,
	}
	if dir == "" {
		return c, nil
	}
	var ev session.EvaluationFile
	if err := session.ReadJSON(ctx, p.store, dir.Summary(), &ev); err != nil {
		return nil, fmt.Errorf("read the round evaluation %s: %w", dir.Summary(), err)
	}
	if ev.NextTasksValid {
		// Checked again: a plan edited since the evaluation is not worked
		// from unchecked; the step falls back to the packet instead.
		if data, err := p.store.Get(ctx, dir.Tasks()); err == nil {
			if nt, err := checklist.ParseNextTasks(data); err == nil {
				c.Plan = nt.Plan()
				return c, nil
			}
		}
	}
	packet, err := p.store.Get(ctx, dir.Packet())
	if err != nil {
		return nil, fmt.Errorf("read the critique packet %s: %w", dir.Packet(), err)
	}
	mount := filepath.Join(p.tmp, "peers", evaluatorMount)
	if err := os.MkdirAll(mount, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(mount, "critique_packet.md"), packet, 0o644); err != nil {
		return nil, err
	}
	ws.Peers[evaluatorMount] = mount
	c.Packet, c.PacketPath = string(packet), "peers/"+evaluatorMount+"/critique_packet.md"
	return c, nil
}

// saveChecklist stores a gated step's checklist state next to its action.
func saveChecklist(ctx context.Context, st storage.Store, agent string, step int, s *round.ChecklistState) error {
	if s == nil {
		return nil
	}
	return session.WriteJSON(ctx, st, session.ChecklistKey(agent, step), s)
}

// evaluation is the round evaluation a gated step works from: the one the
// workflow ran (Options.Evaluation), or — with round_evaluator_before_checklist
// and no orchestrator-managed evaluator — one the step runs itself, before
// its own model calls, over exactly the answers it is shown, stored under
// agents/<id>/<NNN>/evaluator/. A retried step resumes that evaluation's
// checkpoint instead of paying for it again. "" means none.
func (p *prep) evaluation(ctx context.Context, o Options, in *round.Input, agentCfg *config.Agent, criteria []string, stepNo int) (session.EvalDir, error) {
	orch := o.Config.Orchestrator
	switch {
	case orch.VotingSensitivity != config.SensitivityChecklistGated:
		return "", nil
	case o.Evaluation > 0:
		return session.SessionEvaluation(o.Evaluation), nil
	case !orch.RoundEvaluatorBeforeChecklist || orch.OrchestratorManagedRoundEvaluator || !in.HasAnswered || len(in.Answers) == 0:
		return "", nil
	case in.Mode != coord.ModeVoting && in.Mode != coord.ModeDecomposition:
		return "", nil
	}
	visible := map[string]int{}
	for _, a := range in.Answers {
		visible[a.Agent] = a.Step
	}
	dir := session.StepEvaluation(o.Agent, stepNo)
	eo := EvaluateOptions{
		Store: o.Store, Config: o.Config, Round: stepNo, Dir: dir, Task: o.Task, Criteria: criteria, Visible: visible,
		Pressure: string(orch.RoundEvaluatorTransformationPressure), Model: o.Model, ModelName: agentCfg.Backend.Model,
		Temperature: agentCfg.Backend.Temperature, Tag: o.Tag, Owner: o.Owner, OnCheckpoint: o.OnCheckpoint, Logf: o.Logf, Now: o.Now,
	}
	if agentCfg.Backend.MaxTokens != nil {
		n := int64(*agentCfg.Backend.MaxTokens)
		eo.MaxTokens = &n
	}
	if _, _, err := Evaluate(ctx, eo); err != nil {
		return "", fmt.Errorf("the round evaluator before %s's step %d: %w", o.Agent, stepNo, err)
	}
	return dir, nil
}

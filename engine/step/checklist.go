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
func (p *prep) checklistPolicy(ctx context.Context, cfg *config.Config, mode coord.Mode, criteria []string, evaluation int, ws *tools.Workspace) (*round.Checklist, error) {
	o := cfg.Orchestrator
	if o.VotingSensitivity != config.SensitivityChecklistGated {
		return nil, nil
	}
	c := &round.Checklist{
		Criteria:    checklist.Criteria(criteria, mode == coord.ModeDecomposition),
		FirstAnswer: o.ChecklistFirstAnswer,
		MaxCalls:    o.MaxChecklistCallsPerRound,
	}
	if evaluation == 0 {
		return c, nil
	}
	var ev session.EvaluationFile
	if err := session.ReadJSON(ctx, p.store, session.EvaluationKey(evaluation), &ev); err != nil {
		return nil, fmt.Errorf("read the round evaluation before round %d: %w", evaluation, err)
	}
	if ev.NextTasksValid {
		// Checked again: a plan edited since the evaluation is not worked
		// from unchecked; the step falls back to the packet instead.
		if data, err := p.store.Get(ctx, session.NextTasksKey(evaluation)); err == nil {
			if nt, err := checklist.ParseNextTasks(data); err == nil {
				c.Plan = nt.Plan()
				return c, nil
			}
		}
	}
	packet, err := p.store.Get(ctx, session.CritiquePacketKey(evaluation))
	if err != nil {
		return nil, fmt.Errorf("read the critique packet before round %d: %w", evaluation, err)
	}
	dir := filepath.Join(p.tmp, "peers", evaluatorMount)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "critique_packet.md"), packet, 0o644); err != nil {
		return nil, err
	}
	ws.Peers[evaluatorMount] = dir
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

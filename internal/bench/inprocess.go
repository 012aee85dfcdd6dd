package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/step"
	"github.com/conclave-ai/conclave/engine/storage"
)

// runInProcess is the baseline: the same session without Temporal. It
// drives the engine the way a step-mode orchestrator would — barrier
// rounds of engine/step over the same storage and model, the coordination
// rules deciding who steps next — and then presents the winner.
func runInProcess(ctx context.Context, root storage.Store, id string, cfg *config.Config) (time.Duration, error) {
	start := time.Now()
	st := storage.Sub(root, id)
	models := map[string]llm.Model{}
	for _, a := range cfg.Agents {
		m, err := step.NewModel(cfg, &a, config.Egress{}, func(string) string { return "" })
		if err != nil {
			return 0, err
		}
		models[a.ID] = m
	}
	info := session.Info{Task: task, Agents: cfg.AgentIDs(), Mode: string(cfg.Orchestrator.CoordinationMode), CreatedAt: start.UTC()}
	if err := session.WriteJSON(ctx, st, session.InfoKey, info); err != nil {
		return 0, err
	}
	rule := coord.Rule(cfg.Orchestrator.Consensus)
	winner := ""
	for round := 1; winner == ""; round++ {
		if round > 20 {
			return 0, fmt.Errorf("%s: no consensus after 20 rounds", id)
		}
		snap, err := session.Load(ctx, st)
		if err != nil {
			return 0, err
		}
		l := snap.Ledger()
		if o := coord.Decide(l, rule); o.Reached {
			winner = o.Winner
			break
		}
		ids := coord.Relaunch(l)
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		for i, agent := range ids {
			wg.Go(func() {
				_, errs[i] = step.Run(ctx, step.Options{Store: st, Config: cfg, Agent: agent, Task: task,
					Model: models[agent], Tag: strconv.Itoa(round)})
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return 0, err
			}
		}
	}
	_, _, err := step.Present(ctx, step.PresentOptions{Store: st, Config: cfg, Presenter: winner, Task: task,
		Strategy: cfg.Orchestrator.FinalAnswerStrategy, Model: models[winner], Tag: "present"})
	if err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

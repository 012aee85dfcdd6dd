package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/engine/config"
)

// overhead runs Sessions sessions one at a time on Temporal, then the same
// sessions in-process, and fills the overhead, per-step and baseline
// figures. A first session warms the worker up and is not counted.
func overhead(ctx context.Context, e *env, m *model, o Options, cfg *config.Config, rep *Report) error {
	command := o.WorkerCommand
	if o.WorkerCPUProfile != "" && len(command) > 0 {
		command = append(slices.Clone(command), "--cpuprofile", o.WorkerCPUProfile)
	}
	w, err := e.startWorker(command, o.WorkerConcurrency)
	if err != nil {
		return err
	}
	defer w.stop()
	if r := e.runSession(ctx, "warmup", cfg); r.err != nil {
		return fmt.Errorf("warm-up session: %w", r.err)
	}
	var walls, models []time.Duration
	var steps []stepTimes
	var ratios []float64
	for i := 1; i <= o.Sessions; i++ {
		mark := m.mark()
		r := e.runSession(ctx, fmt.Sprintf("overhead-%d", i), cfg)
		if r.err != nil {
			return r.err
		}
		calls := m.since(mark)
		mt := modelTime(calls)
		so, err := e.stepOverheads(ctx, r.id, calls)
		if err != nil {
			return err
		}
		walls, models, steps = append(walls, r.wall), append(models, mt), append(steps, so...)
		ratios = append(ratios, r.wall.Seconds()/mt.Seconds())
		fmt.Fprintf(o.Progress, "overhead %d/%d: session %v, model time %v (%d calls), ratio %.3f\n",
			i, o.Sessions, r.wall.Round(time.Millisecond), mt.Round(time.Millisecond), len(calls), ratios[len(ratios)-1])
	}
	if err := w.stop(); err != nil {
		return err
	}
	var base []time.Duration
	for i := 1; i <= o.Sessions; i++ {
		wall, err := runInProcess(ctx, e.store, fmt.Sprintf("inprocess-%d", i), cfg)
		if err != nil {
			return fmt.Errorf("in-process baseline: %w", err)
		}
		base = append(base, wall)
		fmt.Fprintf(o.Progress, "baseline %d/%d: in-process session %v\n", i, o.Sessions, wall.Round(time.Millisecond))
	}
	slices.Sort(ratios)
	rep.OverheadRatio = round3(ratios[len(ratios)/2])
	rep.SessionWallMS, rep.ModelTimeMS = ms(median(walls)), ms(median(models))
	pick := func(f func(stepTimes) time.Duration) []time.Duration {
		var ds []time.Duration
		for _, s := range steps {
			ds = append(ds, f(s))
		}
		return ds
	}
	rep.StepOverheadMS = percentiles(pick(func(s stepTimes) time.Duration { return s.overhead }))
	rep.StepBreakdownMS = StepBreakdown{
		Dispatch:    percentiles(pick(func(s stepTimes) time.Duration { return s.dispatch })),
		BeforeModel: percentiles(pick(func(s stepTimes) time.Duration { return s.before })),
		AfterModel:  percentiles(pick(func(s stepTimes) time.Duration { return s.after })),
	}
	rep.BaselineWallMS = ms(median(base))
	rep.BaselineRatio = ratio(rep.SessionWallMS, rep.BaselineWallMS)
	return nil
}

// throughput starts n sessions at once on a fresh worker, for every n.
func throughput(ctx context.Context, e *env, m *model, o Options, cfg *config.Config, rep *Report) error {
	for _, n := range o.Concurrency {
		w, err := e.startWorker(o.WorkerCommand, o.WorkerConcurrency)
		if err != nil {
			return err
		}
		runs, wall := e.runConcurrent(ctx, fmt.Sprintf("c%d", n), n, cfg, o.SessionTimeout)
		t := Throughput{Concurrency: n, WallS: round2(wall.Seconds()), PeakRSSMB: round2(w.peakRSS())}
		var firstErr error
		for _, r := range runs {
			switch {
			case r.err == nil:
			case errors.Is(r.err, context.DeadlineExceeded):
				t.TimedOut++
				_ = e.client.TerminateWorkflow(ctx, r.id, "", "benchmark: timed out")
			default:
				t.Failed++
				if firstErr == nil {
					firstErr = r.err
				}
			}
		}
		if done := n - t.TimedOut - t.Failed; done > 0 {
			t.SessionsPerMinute = round2(float64(done) / wall.Minutes())
		}
		if err := w.stop(); err != nil {
			return err
		}
		m.forget(m.mark())
		rep.Throughput = append(rep.Throughput, t)
		fmt.Fprintf(o.Progress, "throughput %d: %v, %.1f sessions/min, %d timed out, %d failed, worker peak %.0f MiB\n",
			n, wall.Round(time.Millisecond), t.SessionsPerMinute, t.TimedOut, t.Failed, t.PeakRSSMB)
		if firstErr != nil {
			fmt.Fprintf(o.Progress, "  first failure: %v\n", firstErr)
		}
	}
	return nil
}

// injectScript is the scenario of seed 003: agents refine their answers
// while their peers' answers land. Each agent answers twice, each answer
// after three file writes of 2 KB, then votes; the agents are not equally
// fast, so answers arrive while the others are mid-step. inject folds them
// into the running step; restart cancels it and starts it again.
func injectScript(latency time.Duration) script {
	return script{Work: 3, FileBytes: 2000, Answers: 2, AnswerBytes: 2000, Default: latency,
		Latency: map[string]time.Duration{"agent_a": latency / 2, "agent_b": latency * 3 / 4, "agent_c": latency}}
}

// injectVsRestart runs the scenario in update_mode inject and restart.
func injectVsRestart(ctx context.Context, e *env, o Options) (*InjectVsRestart, error) {
	m, err := startModel(injectScript(o.Latency))
	if err != nil {
		return nil, err
	}
	defer m.close()
	w, err := e.startWorker(o.WorkerCommand, o.WorkerConcurrency)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	costs := map[string]ModeCost{}
	for _, mode := range []string{"inject", "restart"} {
		cfg, err := teamConfig(m.url, map[string]string{"update_mode": mode})
		if err != nil {
			return nil, err
		}
		// Tokens and calls add up over sessions, so their means are what a
		// mode costs; wall time is a latency, so its median.
		var sum ModeCost
		var walls []time.Duration
		for i := 1; i <= o.Sessions; i++ {
			mark := m.mark()
			r := e.runSession(ctx, fmt.Sprintf("%s-%d", mode, i), cfg)
			if r.err != nil {
				return nil, fmt.Errorf("update_mode %s: %w", mode, r.err)
			}
			calls := m.since(mark)
			one := ModeCost{Tokens: tokenCount(calls), ModelCalls: len(calls)}
			for _, c := range calls {
				if !c.delivered {
					one.Cancelled++
				}
			}
			sum.Tokens, sum.ModelCalls, sum.Cancelled = sum.Tokens+one.Tokens, sum.ModelCalls+one.ModelCalls, sum.Cancelled+one.Cancelled
			walls = append(walls, r.wall)
			fmt.Fprintf(o.Progress, "update_mode %s %d/%d: %v, %d tokens, %d model calls (%d cancelled)\n",
				mode, i, o.Sessions, r.wall.Round(time.Millisecond), one.Tokens, one.ModelCalls, one.Cancelled)
		}
		n := o.Sessions
		costs[mode] = ModeCost{Tokens: sum.Tokens / int64(n), ModelCalls: sum.ModelCalls / n,
			Cancelled: sum.Cancelled / n, WallMS: ms(median(walls))}
	}
	in, re := costs["inject"], costs["restart"]
	return &InjectVsRestart{
		TokenRatio: ratio(float64(in.Tokens), float64(re.Tokens)),
		WallRatio:  ratio(in.WallMS, re.WallMS),
		Inject:     in, Restart: re,
	}, nil
}

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

const task = "Write a one-page guide to durable execution."

// teamConfig is the three-agent team on the scripted model with the given
// orchestrator settings (YAML lines, indented by the caller's keys).
func teamConfig(modelURL string, orchestrator map[string]string) (*config.Config, error) {
	var b strings.Builder
	b.WriteString("agents:\n")
	for _, id := range teamIDs {
		fmt.Fprintf(&b, "  - id: %s\n    backend: {type: openai, model: m-%s, base_url: %q}\n", id, id, modelURL)
	}
	b.WriteString("orchestrator:\n  orchestrator_timeout_seconds: 1800\n")
	for _, k := range sortedKeys(orchestrator) {
		fmt.Fprintf(&b, "  %s: %s\n", k, orchestrator[k])
	}
	return config.Parse([]byte(b.String()), "bench team")
}

// sessionRun is one Temporal session as measured from outside.
type sessionRun struct {
	id     string
	wall   time.Duration
	result workflows.CoordinationResult
	err    error
}

// runSession starts a Coordination session and waits for its result.
func (e *env) runSession(ctx context.Context, id string, cfg *config.Config) sessionRun {
	r := sessionRun{id: id}
	start := time.Now()
	run, err := e.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: worker.DefaultTaskQueue},
		contract.CoordinationName, workflows.CoordinationInput{Task: task, Config: *cfg})
	if err != nil {
		r.err = fmt.Errorf("start %s: %w", id, err)
		return r
	}
	r.err = run.Get(ctx, &r.result)
	r.wall = time.Since(start)
	if r.err == nil && r.result.Status != coord.StatusConsensus {
		r.err = fmt.Errorf("%s ended %s, not in consensus", id, r.result.Status)
	}
	return r
}

// runConcurrent runs n sessions at once; each gets timeout to finish.
func (e *env) runConcurrent(ctx context.Context, prefix string, n int, cfg *config.Config, timeout time.Duration) ([]sessionRun, time.Duration) {
	runs := make([]sessionRun, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			runs[i] = e.runSession(sctx, fmt.Sprintf("%s-%03d", prefix, i+1), cfg)
		})
	}
	wg.Wait()
	return runs, time.Since(start)
}

// stepTimes is where one agent step's time outside the model went.
type stepTimes struct {
	overhead time.Duration // scheduled → completed, minus model time
	dispatch time.Duration // scheduled → started on a worker
	before   time.Duration // started → the step's first model call
	after    time.Duration // the step's last model reply → completed
}

// stepOverheads reads a session's history and returns, for every agent
// step, the time from scheduling to completion that was not model time —
// task dispatch, loading and saving the session, checkpoints, heartbeats —
// and where it went.
func (e *env) stepOverheads(ctx context.Context, id string, calls []call) ([]stepTimes, error) {
	type scheduled struct {
		agent       string
		at, started time.Time
	}
	sched := map[int64]*scheduled{}
	var out []stepTimes
	iter := e.client.GetWorkflowHistory(ctx, id, "", false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		at := ev.GetEventTime().AsTime()
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == contract.NameAgentStep {
			var in contract.AgentStepInput
			if p := a.GetInput().GetPayloads(); len(p) == 1 {
				if err := json.Unmarshal(p[0].GetData(), &in); err != nil {
					return nil, fmt.Errorf("history of %s: an AgentStep input is not JSON (is a payload codec on?): %w", id, err)
				}
			}
			sched[ev.GetEventId()] = &scheduled{agent: in.Agent, at: at}
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			if s, ok := sched[a.GetScheduledEventId()]; ok {
				s.started = at
			}
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			s, ok := sched[a.GetScheduledEventId()]
			if !ok {
				continue
			}
			st := stepTimes{overhead: at.Sub(s.at) - agentModelTime(calls, s.agent, s.at, at)}
			if !s.started.IsZero() {
				st.dispatch = s.started.Sub(s.at)
				var first, last time.Time
				for _, c := range calls {
					if c.agent != s.agent || c.start.Before(s.at) || c.end.After(at) || c.end.IsZero() {
						continue
					}
					if first.IsZero() || c.start.Before(first) {
						first = c.start
					}
					if c.end.After(last) {
						last = c.end
					}
				}
				if !first.IsZero() {
					st.before, st.after = first.Sub(s.started), at.Sub(last)
				}
			}
			out = append(out, st)
		}
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

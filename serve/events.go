package serve

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/workflows"
)

// progress is one line of a run's progress (reasoning_content): an agent
// at work, an answer, a vote, a stop, a failed step, the presentation.
// The lines of a run are a pure function of its workflow history, which
// only grows, so line n is the same whoever reads it and whenever: that
// is what makes sequence numbers stable across restarts of this server.
type progress struct {
	Agent string
	Label string // an answer's label, agentN.M
	Text  string // ends with a new line
}

// ending is how a run ended, from its last history event.
type ending struct {
	state   string // completed, failed, cancelled
	result  *workflows.CoordinationResult
	message string // why it failed
}

// tracker turns history events into progress lines, the usage so far, and
// the run's ending.
type tracker struct {
	dc      converter.DataConverter
	created time.Time
	usage   coord.Usage
	answers []answerRef
	end     *ending
	// nextRun is the run a continued-as-new run goes on in.
	nextRun string
	// steps maps an activity's scheduled event id to its type and input.
	steps map[int64]scheduled
}

type scheduled struct {
	activity string
	agent    string
	step     int
}

// answerRef is one stored answer, as the metadata lists them.
type answerRef struct {
	Label string `json:"label"`
	Agent string `json:"agent"`
	Step  int    `json:"step"`
}

func newTracker(dc converter.DataConverter) *tracker {
	return &tracker{dc: dc, steps: map[int64]scheduled{}}
}

// add reads one event; it returns the progress line it makes, if any.
func (t *tracker) add(ev *historypb.HistoryEvent) *progress {
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		if t.created.IsZero() {
			t.created = ev.GetEventTime().AsTime()
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		a := ev.GetActivityTaskScheduledEventAttributes()
		sc := scheduled{activity: a.GetActivityType().GetName()}
		switch sc.activity {
		case contract.NameAgentStep:
			var in contract.AgentStepInput
			if t.dc.FromPayloads(a.GetInput(), &in) != nil {
				return nil
			}
			sc.agent, sc.step = in.Agent, in.Step
			t.steps[ev.GetEventId()] = sc
			return &progress{Agent: in.Agent, Text: fmt.Sprintf("%s is working (step %d)\n", in.Agent, in.Step)}
		case contract.NamePresent:
			var in contract.PresentInput
			if t.dc.FromPayloads(a.GetInput(), &in) != nil {
				return nil
			}
			sc.agent = in.Presenter
			t.steps[ev.GetEventId()] = sc
			return &progress{Agent: in.Presenter, Text: fmt.Sprintf("%s is presenting the final answer\n", in.Presenter)}
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		a := ev.GetActivityTaskCompletedEventAttributes()
		sc, ok := t.steps[a.GetScheduledEventId()]
		if !ok {
			return nil
		}
		delete(t.steps, a.GetScheduledEventId())
		if sc.activity == contract.NamePresent {
			var res contract.PresentResult
			if t.dc.FromPayloads(a.GetResult(), &res) == nil {
				t.usage = t.usage.Add(res.Usage)
			}
			return nil
		}
		var res contract.AgentStepResult
		if t.dc.FromPayloads(a.GetResult(), &res) != nil {
			return nil
		}
		t.usage = t.usage.Add(res.Usage)
		return t.action(res)
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
		a := ev.GetActivityTaskFailedEventAttributes()
		return t.failedStep(a.GetScheduledEventId(), a.GetFailure().GetMessage())
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
		a := ev.GetActivityTaskTimedOutEventAttributes()
		return t.failedStep(a.GetScheduledEventId(), "timed out")
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
		delete(t.steps, ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId())
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		var res workflows.CoordinationResult
		if err := t.dc.FromPayloads(ev.GetWorkflowExecutionCompletedEventAttributes().GetResult(), &res); err != nil {
			t.end = &ending{state: "failed", message: "the run's result could not be read: " + err.Error()}
			return nil
		}
		t.end = &ending{state: "completed", result: &res}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
		t.end = &ending{state: "failed", message: ev.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetMessage()}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
		t.end = &ending{state: "failed", message: "the run timed out"}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
		t.end = &ending{state: "failed", message: "the run was terminated: " + ev.GetWorkflowExecutionTerminatedEventAttributes().GetReason()}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		t.end = &ending{state: "cancelled", message: "the run was cancelled; its stored answers are kept"}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		t.nextRun = ev.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
		t.steps = map[int64]scheduled{}
	}
	return nil
}

func (t *tracker) action(res contract.AgentStepResult) *progress {
	p := &progress{Agent: res.Agent}
	switch res.Action {
	case coord.ActionNewAnswer:
		p.Label = res.Label
		t.answers = append(t.answers, answerRef{Label: res.Label, Agent: res.Agent, Step: res.Step})
		p.Text = fmt.Sprintf("%s answered (%s): %s\n", res.Agent, res.Label, oneLine(res.AnswerPreview))
	case coord.ActionVote:
		p.Text = fmt.Sprintf("%s voted for %s: %s\n", res.Agent, res.Target, oneLine(res.Reason))
	case coord.ActionStop:
		p.Text = fmt.Sprintf("%s stopped (%s): %s\n", res.Agent, res.StopStatus, oneLine(res.Summary))
	default:
		p.Text = fmt.Sprintf("%s finished step %d\n", res.Agent, res.Step)
	}
	return p
}

func (t *tracker) failedStep(scheduledID int64, why string) *progress {
	sc, ok := t.steps[scheduledID]
	if !ok {
		return nil
	}
	delete(t.steps, scheduledID)
	if sc.activity == contract.NamePresent {
		return &progress{Agent: sc.agent, Text: fmt.Sprintf("presenting by %s failed: %s\n", sc.agent, oneLine(why))}
	}
	return &progress{Agent: sc.agent, Text: fmt.Sprintf("%s step %d failed: %s\n", sc.agent, sc.step, oneLine(why))}
}

// oneLine keeps a preview on its line: progress is read line by line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 280 {
		s = string(r[:279]) + "…"
	}
	return s
}

// walk reads the run's history from its first run on, through every
// continue-as-new, calling fn for each progress line in order. With follow
// it waits for new events until the run ends; without, it stops at the
// end of what is recorded now.
func (s *Server) walk(ctx context.Context, r *run, follow bool, fn func(n int, p progress) error) (*tracker, error) {
	t := newTracker(s.dc)
	n := 0
	runID := r.firstRunID
	for runID != "" {
		t.nextRun = ""
		it := s.opts.Client.GetWorkflowHistory(ctx, r.id, runID, follow, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return t, err
			}
			if p := t.add(ev); p != nil {
				if err := fn(n, *p); err != nil {
					return t, err
				}
				n++
			}
		}
		runID = t.nextRun
	}
	return t, nil
}

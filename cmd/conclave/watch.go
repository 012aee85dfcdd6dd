package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/engine/coord"
)

// callTimeout bounds each call a progress view makes, so a slow or absent
// worker (queries need one) cannot freeze the view.
const callTimeout = 5 * time.Second

// retryingStep is a step Temporal is retrying: what failed last, and when
// the next attempt starts. A model endpoint that refuses connections shows
// up here long before the step gives up.
type retryingStep struct {
	Step        string     `json:"step"`
	Attempt     int32      `json:"attempt"`
	MaxAttempts int32      `json:"max_attempts,omitempty"`
	LastFailure string     `json:"last_failure"`
	NextRetry   *time.Time `json:"next_retry,omitempty"`
}

func (r retryingStep) String() string {
	s := fmt.Sprintf("%s: attempt %d", r.Step, r.Attempt)
	if r.MaxAttempts > 0 {
		s += fmt.Sprintf(" of %d", r.MaxAttempts)
	}
	if r.NextRetry != nil {
		if d := time.Until(*r.NextRetry).Round(time.Second); d > 0 {
			s += fmt.Sprintf(", next in %s", d)
		}
	}
	return s + " · last failure: " + r.LastFailure
}

// watcher asks Temporal what a session's progress query cannot say:
// steps being retried and whether any worker polls the task queue.
type watcher struct {
	c         client.Client
	taskQueue string
	namespace string
	dc        converter.DataConverter
	fc        converter.FailureConverter
	// summaries caches each activity id's summary ("agent_a · step 2").
	summaries map[string]string
	// tools notes, per agent, the tool calls of its running step, from
	// the step's heartbeat (tools.go).
	tools map[string]string
	// noPollerSince is when the task queue was first seen without pollers;
	// a worker that is just starting gets grace to show up.
	noPollerSince time.Time
	grace         time.Duration
}

// noWorkerGrace is how long the task queue may lack pollers before the
// view warns: long enough for a worker started alongside to poll, short
// enough to warn within seconds.
const noWorkerGrace = 3 * time.Second

func newWatcher(c client.Client, f *temporalFlags) *watcher {
	w := &watcher{c: c, taskQueue: f.taskQueue, namespace: f.namespace, summaries: map[string]string{}, grace: noWorkerGrace,
		dc: converter.GetDefaultDataConverter(), fc: temporal.GetDefaultFailureConverter()}
	if o, err := f.options(); err == nil {
		if o, err = withCodec(o); err == nil {
			if o.DataConverter != nil {
				w.dc = o.DataConverter
			}
			if o.FailureConverter != nil {
				w.fc = o.FailureConverter
			}
		}
	}
	return w
}

// retrying lists the session's steps whose latest attempt failed.
func (w *watcher) retrying(ctx context.Context, id string) ([]retryingStep, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	d, err := w.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, err
	}
	var out []retryingStep
	w.tools = map[string]string{}
	for _, pa := range d.GetPendingActivities() {
		w.noteTools(ctx, id, pa)
		lf := pa.GetLastFailure()
		if lf == nil || pa.GetAttempt() < 2 {
			continue
		}
		r := retryingStep{
			Step:        w.summary(ctx, id, pa.GetActivityId(), pa.GetActivityType().GetName()),
			Attempt:     pa.GetAttempt(),
			MaxAttempts: pa.GetMaximumAttempts(),
			LastFailure: briefCause(w.fc.FailureToError(lf)),
		}
		if t := pa.GetNextAttemptScheduleTime(); t != nil && t.IsValid() {
			next := t.AsTime()
			r.NextRetry = &next
		}
		out = append(out, r)
	}
	return out, nil
}

// summary is the activity's summary as the workflow set it, read from the
// history once per activity; the activity type when there is none.
func (w *watcher) summary(ctx context.Context, id, activityID, activityType string) string {
	if s, ok := w.summaries[activityID]; ok {
		return s
	}
	s := activityType
	it := w.c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			break
		}
		attrs := ev.GetActivityTaskScheduledEventAttributes()
		if attrs == nil || attrs.GetActivityId() != activityID {
			continue
		}
		var text string
		if p := ev.GetUserMetadata().GetSummary(); p != nil && w.dc.FromPayload(p, &text) == nil && text != "" {
			s = text
		}
		break
	}
	w.summaries[activityID] = s
	return s
}

// noWorker returns a warning when no worker polls the task queue, "" when
// one does.
func (w *watcher) noWorker(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		d, err := w.c.DescribeTaskQueue(ctx, w.taskQueue, typ)
		if err != nil {
			return "", err
		}
		if len(d.GetPollers()) == 0 {
			return fmt.Sprintf("no worker polls task queue %q in namespace %s: nothing runs until one does; "+
				"start `conclave worker` with the same --task-queue, namespace and Temporal address", w.taskQueue, w.namespace), nil
		}
	}
	return "", nil
}

// isNotFound tells whether err says the workflow does not exist.
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// issue is one thing wrong with a session's progress. Key identifies it
// across refreshes (without what changes every second, such as countdowns).
type issue struct{ key, text string }

// issues is the part of a progress view that says what is wrong: each
// issue printed once while it stays true, again if it comes back.
type issues struct {
	shown map[string]bool
}

func (is *issues) report(current []issue) string {
	var b strings.Builder
	now := make(map[string]bool, len(current))
	for _, l := range current {
		now[l.key] = true
		if !is.shown[l.key] {
			fmt.Fprintf(&b, "  ! %s\n", terminalLine(l.text))
		}
	}
	is.shown = now
	return b.String()
}

// problems gathers what is wrong with workflow id (no worker, Temporal not
// answering) and the steps being retried. workerSeen skips the poller
// check once a worker was seen.
func (w *watcher) problems(ctx context.Context, id string, workerSeen *bool) ([]issue, []retryingStep) {
	var out []issue
	if !*workerSeen {
		warn, err := w.noWorker(ctx)
		switch {
		case err != nil:
			out = append(out, issue{"tq-error", "cannot tell whether a worker polls task queue " + w.taskQueue + ": " + briefCause(err)})
		case warn != "":
			if w.noPollerSince.IsZero() {
				w.noPollerSince = time.Now()
			}
			if time.Since(w.noPollerSince) >= w.grace {
				out = append(out, issue{"no-worker", warn})
			}
		default:
			*workerSeen = true
			w.noPollerSince = time.Time{}
		}
	}
	retrying, err := w.retrying(ctx, id)
	if err != nil {
		out = append(out, issue{"describe-error", "cannot describe " + id + ": " + briefCause(err)})
	}
	return out, retrying
}

// check is problems plus the session's status query, which needs a worker:
// without one it would only time out, so it is skipped.
func (w *watcher) check(ctx context.Context, id string, workerSeen *bool) ([]issue, []retryingStep, *coord.Status) {
	out, retrying := w.problems(ctx, id, workerSeen)
	if !*workerSeen {
		return out, retrying, nil
	}
	qctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	s, err := queryStatus(qctx, w.c, id)
	if err != nil {
		out = append(out, issue{"query-error", "the status query failed: " + briefCause(err)})
		return out, retrying, nil
	}
	return out, retrying, &s
}

// retryIssues turns retrying steps into issues, one per attempt.
func retryIssues(rs []retryingStep) []issue {
	out := make([]issue, 0, len(rs))
	for _, r := range rs {
		out = append(out, issue{fmt.Sprintf("retry %s %d", r.Step, r.Attempt), r.String()})
	}
	return out
}

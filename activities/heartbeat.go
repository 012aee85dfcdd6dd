package activities

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
)

// Progress is the heartbeat detail of an agent step: how many model turns
// are checkpointed. The Web UI shows it; the resume itself reads the stored
// transcript, which holds more than a heartbeat may.
type Progress struct {
	Turns int `json:"turns"`
	// ToolCalls counts the step's MCP and command calls that returned;
	// Tool is the one running now.
	ToolCalls int    `json:"tool_calls,omitempty"`
	Tool      string `json:"tool,omitempty"`
}

type heartbeater struct {
	mu   sync.Mutex
	p    Progress
	done chan struct{}
	once sync.Once
	// now asks the beating goroutine for a beat at once; nil outside an
	// activity.
	now chan struct{}
	// exited is closed when the beating goroutine has returned.
	exited chan struct{}
	// everyTurn beats after every checkpoint, not only on the timer: for
	// steps the workflow may cancel mid-way (update_mode restart).
	everyTurn bool
}

// heartbeat records progress on a timer, so a worker that dies is noticed
// within the heartbeat timeout and a cancellation reaches the step.
func (a *Activities) heartbeat(ctx context.Context) *heartbeater {
	h := &heartbeater{done: make(chan struct{})}
	if !activity.IsActivity(ctx) {
		return h
	}
	h.now = make(chan struct{}, 1)
	h.now <- struct{}{} // the first beat, without holding up the step
	every := a.HeartbeatEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	// Beat well within the timeout the workflow chose, whatever it is.
	if limit := activity.GetInfo(ctx).HeartbeatTimeout; limit > 0 && every > limit/3 {
		every = limit / 3
	}
	// Beats go out from this goroutine: an unthrottled heartbeat is a
	// round trip to the server that a step should not wait for.
	h.exited = make(chan struct{})
	go func() {
		defer close(h.exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			case <-h.now:
			}
			activity.RecordHeartbeat(ctx, h.progress())
		}
	}()
	return h
}

func (h *heartbeater) progress() Progress {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.p
}

// turns records a checkpoint. With everyTurn it also beats at once, so
// the step learns of its cancellation (update_mode restart) at its next
// safe point rather than at the next tick; the SDK throttles what is sent.
func (h *heartbeater) turns(n int) {
	h.mu.Lock()
	h.p.Turns = n
	h.mu.Unlock()
	if h.now != nil && h.everyTurn {
		select {
		case h.now <- struct{}{}:
		default: // a beat is already due
		}
	}
}

// stop ends the beating and waits for a beat in flight: the step's
// completion cancels its context, which would cut that call off mid-way.
func (h *heartbeater) stop() {
	h.once.Do(func() { close(h.done) })
	if h.exited != nil {
		<-h.exited
	}
}

// tool records a tool call starting (running) or returning.
func (h *heartbeater) tool(name string, running bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if running {
		h.p.Tool = name
		return
	}
	h.p.Tool = ""
	h.p.ToolCalls++
}

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
}

type heartbeater struct {
	mu   sync.Mutex
	p    Progress
	done chan struct{}
	once sync.Once
	// now asks the beating goroutine for a beat at once; nil outside an
	// activity.
	now chan struct{}
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
	go func() {
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

// turns records a checkpoint and beats at once: a step learns of its
// cancellation (update_mode restart, a cancelled session) at its next safe
// point rather than at the next tick. The SDK throttles what is sent.
func (h *heartbeater) turns(n int) {
	h.mu.Lock()
	h.p.Turns = n
	h.mu.Unlock()
	if h.now != nil {
		select {
		case h.now <- struct{}{}:
		default: // a beat is already due
		}
	}
}

func (h *heartbeater) stop() { h.once.Do(func() { close(h.done) }) }

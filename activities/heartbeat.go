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
}

// heartbeat records progress on a timer, so a worker that dies is noticed
// within the heartbeat timeout and a cancellation reaches the step.
func (a *Activities) heartbeat(ctx context.Context) *heartbeater {
	h := &heartbeater{done: make(chan struct{})}
	if !activity.IsActivity(ctx) {
		return h
	}
	every := a.HeartbeatEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	// Beat well within the timeout the workflow chose, whatever it is.
	if limit := activity.GetInfo(ctx).HeartbeatTimeout; limit > 0 && every > limit/3 {
		every = limit / 3
	}
	activity.RecordHeartbeat(ctx, h.progress())
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
				activity.RecordHeartbeat(ctx, h.progress())
			}
		}
	}()
	return h
}

func (h *heartbeater) progress() Progress {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.p
}

func (h *heartbeater) turns(n int) {
	h.mu.Lock()
	h.p.Turns = n
	h.mu.Unlock()
}

func (h *heartbeater) stop() { h.once.Do(func() { close(h.done) }) }

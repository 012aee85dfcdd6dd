package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// keepAliveEvery is how often an idle stream gets a comment line, so
// proxies and clients with idle timeouts keep it open while agents think.
const keepAliveEvery = 15 * time.Second

// sse writes server-sent events, flushing each, so a client sees every
// event when it happens.
type sse struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	started bool
}

func newSSE(w http.ResponseWriter) *sse { return &sse{w: w} }

// keepAlive writes a comment every interval until the returned stop is
// called; stop returns once nothing more will be written.
func (e *sse) keepAlive(every time.Duration) (stop func()) {
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				e.mu.Lock()
				e.begin()
				_, err := fmt.Fprint(e.w, ": keep-alive\n\n")
				_ = http.NewResponseController(e.w).Flush()
				e.mu.Unlock()
				if err != nil {
					return
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}

// begin sends the headers once; callers hold mu.
func (e *sse) begin() {
	if e.started {
		return
	}
	h := e.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	e.w.WriteHeader(http.StatusOK)
	e.started = true
}

func (e *sse) send(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.begin()
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", data); err != nil {
		return err
	}
	_ = http.NewResponseController(e.w).Flush() // a writer that cannot flush still delivers at the end
	return nil
}

func (e *sse) done() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.begin()
	_, _ = fmt.Fprint(e.w, "data: [DONE]\n\n")
	_ = http.NewResponseController(e.w).Flush()
}

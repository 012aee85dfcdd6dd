package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Health answers Kubernetes' probes. Live is true while the process serves
// at all; Ready once the worker polls and its last check of Temporal worked.
type Health struct {
	started atomic.Bool
	// Check asks whether the worker can reach Temporal (client.CheckHealth).
	Check func(ctx context.Context) error
}

// SetStarted marks the worker as polling (or, with false, stopping).
func (h *Health) SetStarted(v bool) { h.started.Store(v) }

func (h *Health) ready(ctx context.Context) error {
	if !h.started.Load() {
		return errors.New("the worker is not polling (starting or stopping)")
	}
	if h.Check != nil {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := h.Check(ctx); err != nil {
			return fmt.Errorf("cannot reach Temporal: %w", err)
		}
	}
	return nil
}

// Handler serves /metrics (Prometheus text), /healthz (liveness) and
// /readyz (readiness) on one port.
func (t *Telemetry) Handler(h *Health) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(t.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := h.ready(r.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// Serve listens on addr and serves handler until ctx ends. It returns the
// address it listens on (a port of 0 picks a free one) once listening.
func Serve(ctx context.Context, addr string, handler http.Handler) (string, <-chan error, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(l)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return l.Addr().String(), done, nil
}

// Package telemetry gives a Conclave worker what production needs to watch
// it: Prometheus metrics (the Temporal SDK's worker metrics and Conclave's
// own: model calls, tokens, cost, step outcomes, enforcement retries,
// sessions), OpenTelemetry traces (the SDK's workflow and activity spans,
// and one GenAI span per model call) and health endpoints for probes.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// instrumentation names the meter and tracer of Conclave's own telemetry.
const instrumentation = "github.com/conclave-ai/conclave"

// Options configure telemetry.
type Options struct {
	// Service is the OpenTelemetry service.name ("conclave-worker").
	Service string
	// Version is the service.version.
	Version string
	// Getenv reads OTEL_EXPORTER_OTLP_* (nil: os.Getenv). Tracing is on
	// when OTEL_EXPORTER_OTLP_ENDPOINT or …_TRACES_ENDPOINT is set.
	Getenv func(string) string
}

// Telemetry holds the providers of one process. The zero value is not
// usable; build it with New and call Shutdown when the process ends.
type Telemetry struct {
	// Registry holds every metric that /metrics serves.
	Registry *prometheus.Registry

	meters  *sdkmetric.MeterProvider
	tracers *sdktrace.TracerProvider // nil without an OTLP endpoint
	tracer  trace.Tracer
	m       *instruments
	models  *modelLabels
	// toolsOnce makes the tool call instruments (tools.go) on first use.
	toolsOnce sync.Once
	toolsIn   *toolInstruments
}

// New sets up metrics, and traces when an OTLP endpoint is configured.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.Service == "" {
		o.Service = "conclave-worker"
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the defaults.
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName(o.Service), semconv.ServiceVersion(o.Version)),
		resource.WithTelemetrySDK(), resource.WithFromEnv(), resource.WithHost())
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	models, err := newModelLabels(getenv)
	if err != nil {
		return nil, err
	}
	t := &Telemetry{Registry: prometheus.NewRegistry(), models: models}
	t.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(t.Registry), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	t.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res),
		sdkmetric.WithView(durationBuckets))
	if t.m, err = newInstruments(t.meters.Meter(instrumentation)); err != nil {
		return nil, err
	}
	t.tracer = noop.NewTracerProvider().Tracer(instrumentation)
	if endpoint(getenv) {
		se, err := spanExporter(ctx, getenv)
		if err != nil {
			return nil, err
		}
		t.tracers = sdktrace.NewTracerProvider(sdktrace.WithBatcher(se), sdktrace.WithResource(res))
		t.tracer = t.tracers.Tracer(instrumentation)
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	}
	return t, nil
}

// durationBuckets gives model call latency buckets that fit LLM calls
// (from 50 ms to 5 min) instead of the SDK's default milliseconds.
var durationBuckets = sdkmetric.NewView(
	sdkmetric.Instrument{Name: metricModelDuration},
	sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{
		Boundaries: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300},
	}},
)

func endpoint(getenv func(string) string) bool {
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// spanExporter exports over OTLP with the protocol the standard variables
// choose (http/protobuf by default, as the specification says); the
// exporters read the endpoint, headers and TLS settings themselves.
func spanExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		se  sdktrace.SpanExporter
		err error
	)
	switch strings.ToLower(proto) {
	case "", "http/protobuf":
		se, err = otlptracehttp.New(ctx)
	case "grpc":
		se, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: Conclave exports traces with grpc or http/protobuf", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	return se, nil
}

// Tracing tells whether spans are exported.
func (t *Telemetry) Tracing() bool { return t.tracers != nil }

// ClientOptions adds the SDK's metrics (and, with tracing, its tracing
// interceptor) to the options of the client a worker is built on.
func (t *Telemetry) ClientOptions(o client.Options) (client.Options, error) {
	o.MetricsHandler = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: t.meters.Meter("temporal-sdk-go"),
		// Counters as Prometheus counters (_total), not gauges.
		UseMonotonicCounters: true,
	})
	if t.tracers != nil {
		ti, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
			Tracer: t.tracers.Tracer("temporal-sdk-go"),
		})
		if err != nil {
			return o, fmt.Errorf("tracing interceptor: %w", err)
		}
		o.Interceptors = append(o.Interceptors, ti)
	}
	return o, nil
}

// Shutdown flushes pending spans and stops the providers.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	if t.tracers != nil {
		errs = append(errs, t.tracers.Shutdown(ctx))
	}
	errs = append(errs, t.meters.Shutdown(ctx))
	return errors.Join(errs...)
}

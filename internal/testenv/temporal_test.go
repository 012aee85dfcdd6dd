//go:build integration

package testenv

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

func greet(_ workflow.Context, name string) (string, error) { return "hello " + name, nil }

// TestStartTemporal walks one server through what the integration and
// fault tests rely on: namespace and search attributes ready on return, a
// real workflow round trip, a restart that keeps history, and a Stop that
// frees the port.
func TestStartTemporal(t *testing.T) {
	begin := time.Now()
	s := StartTemporal(t, WithDBFile(filepath.Join(t.TempDir(), "temporal.db")))
	t.Logf("ready after %s at %s", time.Since(begin).Round(time.Millisecond), s.HostPort)
	if s.UIURL != "" {
		t.Errorf("UIURL = %q for a headless server", s.UIURL)
	}
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	if err != nil {
		t.Fatalf("describe namespace: %v", err)
	}
	if got := ns.GetNamespaceInfo().GetName(); got != "default" || s.Namespace != "default" {
		t.Fatalf("namespace = %q (server says %q), want default", s.Namespace, got)
	}
	sa, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: s.Namespace})
	if err != nil {
		t.Fatalf("list search attributes: %v", err)
	}
	for _, name := range []string{"ConclavePhase", "ConclaveWinner"} {
		if typ := sa.GetCustomAttributes()[name]; typ != enums.INDEXED_VALUE_TYPE_KEYWORD {
			t.Errorf("search attribute %s = %v, want Keyword", name, typ)
		}
	}

	const queue = "testenv-temporal"
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(greet)
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "testenv-greet", TaskQueue: queue,
		// Setting one proves the attribute is usable, not just listed.
		TypedSearchAttributes: temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword("ConclavePhase").ValueSet("done")),
	}, greet, "conclave")
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello conclave" {
		t.Fatalf("workflow result = %q, %v; want hello conclave", got, err)
	}
	w.Stop()
	t.Logf("workflow done after %s", time.Since(begin).Round(time.Millisecond))

	hostPort := s.HostPort
	restart := time.Now()
	s.Restart(t)
	t.Logf("restarted in %s", time.Since(restart).Round(time.Millisecond))
	if s.HostPort != hostPort {
		t.Fatalf("HostPort changed across Restart: %s → %s", hostPort, s.HostPort)
	}
	// The client dialed before the restart is reused on purpose: fault
	// tests keep their clients and workers across one.
	desc, err := c.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
	if err != nil {
		t.Fatalf("describe the workflow after restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("workflow status after restart = %v, want Completed", st)
	}
	got = ""
	if err := c.GetWorkflow(ctx, run.GetID(), run.GetRunID()).Get(ctx, &got); err != nil || got != "hello conclave" {
		t.Fatalf("result after restart = %q, %v; want hello conclave", got, err)
	}

	t.Logf("described after %s", time.Since(begin).Round(time.Millisecond))
	s.Stop()
	s.Stop() // the cleanup calls it again
	if conn, err := net.DialTimeout("tcp", s.HostPort, time.Second); err == nil {
		_ = conn.Close()
		t.Fatalf("something still listens on %s after Stop", s.HostPort)
	}
	t.Logf("total %s", time.Since(begin).Round(time.Millisecond))
}

func TestStartTemporalUI(t *testing.T) {
	begin := time.Now()
	s := StartTemporal(t, WithUI(true))
	t.Logf("ready after %s, UI at %s", time.Since(begin).Round(time.Millisecond), s.UIURL)
	if !strings.HasPrefix(s.UIURL, "http://127.0.0.1:") {
		t.Fatalf("UIURL = %q, want a loopback URL", s.UIURL)
	}
	// Start waits for the UI too, so one request must do.
	resp, err := http.Get(s.UIURL)
	if err != nil {
		t.Fatalf("Web UI at %s: %v", s.UIURL, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Web UI at %s: %s", s.UIURL, resp.Status)
	}
}

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
)

// temporalFlags are the connection flags shared by every command that talks
// to Temporal; they default to Temporal's standard environment variables.
type temporalFlags struct {
	address, namespace, taskQueue, ui string
}

func (f *temporalFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.address, "address", envOr("TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port (env TEMPORAL_ADDRESS)")
	cmd.Flags().StringVar(&f.namespace, "namespace", envOr("TEMPORAL_NAMESPACE", "default"), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	cmd.Flags().StringVar(&f.taskQueue, "task-queue", "conclave", "task queue of the Conclave workers")
}

func (f *temporalFlags) addUI(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.ui, "ui", envOr("CONCLAVE_UI", "http://127.0.0.1:8233"), "Temporal Web UI base URL, for links (env CONCLAVE_UI)")
}

func (f *temporalFlags) dial() (client.Client, error) {
	o, err := withCodec(client.Options{HostPort: f.address, Namespace: f.namespace, Logger: quietLogger{}})
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(o)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w; is the server running? (`conclave dev` starts one)", f.address, f.namespace, err)
	}
	return c, nil
}

func (f *temporalFlags) link(workflowID string) string {
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", f.ui, f.namespace, workflowID)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// quietLogger keeps the SDK's informational logs out of a CLI's output;
// warnings and errors still reach stderr.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(msg string, kv ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"temporal warning:", msg}, kv...)...)
}
func (quietLogger) Error(msg string, kv ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"temporal error:", msg}, kv...)...)
}

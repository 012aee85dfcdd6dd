package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/conclave-ai/conclave/internal/demo"
)

// newDemoModelCmd serves the offline demo model on its own, so a worker
// started by hand (or a deployment test) can use it as a base_url.
func newDemoModelCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:    "demo-model",
		Short:  "Serve the built-in offline demo model (OpenAI-compatible) until interrupted",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv := demo.NewServer()
			srv.Addr = addr
			srv.SkipRecording = true
			if err := srv.Start(); err != nil {
				return err
			}
			defer srv.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "demo model at %s (models demo-analyst, demo-critic, demo-writer)\n", srv.URL())
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "listen address")
	return cmd
}

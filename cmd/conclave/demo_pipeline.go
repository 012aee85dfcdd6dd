package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

const demoTopic = "How our team uses Temporal"

// demoPipeline runs a scenario directory as a pipeline on a fresh dev
// server, with the offline demo model when no key is set.
func demoPipeline(cmd *cobra.Command, f devFlags, scenario, agentPath, topic string, keep bool) error {
	ctx, out := cmd.Context(), cmd.OutOrStdout()
	pf := &pipelineFlags{scenario: scenario, configPath: agentPath, poll: 500 * time.Millisecond}
	def, err := pf.definition()
	if err != nil {
		return err
	}
	if b := def.Backend; b.BaseURL == "" && os.Getenv(apiKeyEnv(b.APIKeyEnv)) == "" {
		url, stop, err := startDemoModel(out)
		if err != nil {
			return err
		}
		defer stop()
		b.BaseURL, b.Model = url, "demo-writer"
	}
	env, err := startDev(ctx, f, nil, out)
	if err != nil {
		return err
	}
	defer env.close()
	pf.temporalFlags = temporalFlags{address: env.server.HostPort, namespace: env.server.Namespace,
		taskQueue: worker.DefaultTaskQueue, ui: env.server.UIURL}
	fmt.Fprintf(out, "Temporal dev server %s, Web UI %s, storage %s\n\n", env.server.HostPort, env.server.UIURL, env.store)
	if err := startPipeline(ctx, env.client, pf, workflows.PipelineInput{Definition: def, Input: topic}, out); err != nil {
		return err
	}
	linger(ctx, out, keep, env.server.UIURL, f.db)
	return nil
}

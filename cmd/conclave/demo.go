package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/internal/demo"
	"github.com/conclave-ai/conclave/worker"
)

const demoTask = "Explain in three sentences why durable execution matters for teams of LLM agents."

func newDemoCmd() *cobra.Command {
	var f devFlags
	var configPath, scenario, agentPath string
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo [task]",
		Short: "Run a three-agent session on a fresh Temporal dev server (offline model without OPENAI_API_KEY)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			task := demoTask
			if len(args) == 1 {
				task = args[0]
			}
			if scenario != "" {
				if len(args) == 0 {
					task = demoTopic
				}
				return demoPipeline(cmd, f, scenario, agentPath, task, keep)
			}
			in, err := sessionInput(configPath, "", task)
			if err != nil {
				return err
			}
			if offline(&in.Config) {
				url, stop, err := startDemoModel(out)
				if err != nil {
					return err
				}
				defer stop()
				for i := range in.Config.Agents {
					b := &in.Config.Agents[i].Backend
					b.BaseURL, b.Model = url, "demo-"+in.Config.Agents[i].ID
				}
			}
			env, err := startDev(ctx, f, nil, out)
			if err != nil {
				return err
			}
			defer env.close()
			rf := &runFlags{temporalFlags: temporalFlags{address: env.server.HostPort, namespace: env.server.Namespace,
				taskQueue: worker.DefaultTaskQueue, ui: env.server.UIURL}, poll: 500 * time.Millisecond}
			fmt.Fprintf(out, "Temporal dev server %s, Web UI %s, storage %s\n\n", env.server.HostPort, env.server.UIURL, env.store)
			if err := startAndFollow(ctx, env.client, rf, in, out); err != nil {
				return err
			}
			linger(ctx, out, keep, env.server.UIURL, f.db)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&configPath, "config", "examples/demo.yaml", "agents config")
	cmd.Flags().StringVar(&scenario, "scenario", "", "run this scenario directory as a pipeline instead of a session (e.g. examples/scenario)")
	cmd.Flags().StringVar(&agentPath, "agent", "examples/pipeline-agent.yaml", "with --scenario: the config of the agent that runs the steps")
	cmd.Flags().BoolVar(&keep, "keep", true, "on a terminal, keep the dev server up after the session until Ctrl-C")
	return cmd
}

// startDemoModel serves the offline demo model and says so.
func startDemoModel(out io.Writer) (url string, stop func(), err error) {
	srv := demo.NewServer()
	srv.SkipRecording = true
	if err := srv.Start(); err != nil {
		return "", nil, err
	}
	fmt.Fprintf(out, "OPENAI_API_KEY is not set: using the built-in OFFLINE DEMO MODEL (a scripted\n"+
		"OpenAI-compatible server at %s). Temporal, the workflow, the activities,\n"+
		"storage and the openai-go client are all real. Set OPENAI_API_KEY to use a real model.\n\n", srv.URL())
	return srv.URL(), srv.Close, nil
}

// linger keeps the dev server up on a terminal so the run can be browsed.
func linger(ctx context.Context, out io.Writer, keep bool, ui, db string) {
	if keep && isTerminal(os.Stdin) {
		fmt.Fprintf(out, "\nThe dev server keeps running so you can browse the run in the Web UI: %s\nPress Ctrl-C to stop.\n", ui)
		<-ctx.Done()
		return
	}
	fmt.Fprintf(out, "\nThe run is kept in %s; `%s` serves it again in the Web UI.\n", db, devCommand(db))
}

// offline is true when the config needs OpenAI's key and none is set.
func offline(cfg *config.Config) bool {
	for _, a := range cfg.Agents {
		if a.Backend.BaseURL == "" && os.Getenv(apiKeyEnv(a.Backend.APIKeyEnv)) == "" {
			return true
		}
	}
	return false
}

// apiKeyEnv is the variable a backend's key is read from.
func apiKeyEnv(name string) string {
	if name == "" {
		return llm.DefaultAPIKeyEnv
	}
	return name
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

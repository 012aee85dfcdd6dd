package main

import (
	"fmt"
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
	var configPath string
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
			in, err := sessionInput(configPath, "", task)
			if err != nil {
				return err
			}
			if offline(&in.Config) {
				srv := demo.NewServer()
				srv.SkipRecording = true
				if err := srv.Start(); err != nil {
					return err
				}
				defer srv.Close()
				for i := range in.Config.Agents {
					b := &in.Config.Agents[i].Backend
					b.BaseURL, b.Model = srv.URL(), "demo-"+in.Config.Agents[i].ID
				}
				fmt.Fprintf(out, "OPENAI_API_KEY is not set: using the built-in OFFLINE DEMO MODEL (a scripted\n"+
					"OpenAI-compatible server at %s). Temporal, the workflow, the activities,\n"+
					"storage and the openai-go client are all real. Set OPENAI_API_KEY to use a real model.\n\n", srv.URL())
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
			if keep && isTerminal(os.Stdin) {
				fmt.Fprintf(out, "\nThe dev server keeps running so you can browse the session in the Web UI: %s\nPress Ctrl-C to stop.\n", env.server.UIURL)
				<-ctx.Done()
			} else {
				fmt.Fprintf(out, "\nThe session is kept in %s; `./bin/conclave dev` serves it again in the Web UI.\n", f.db)
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&configPath, "config", "examples/demo.yaml", "agents config")
	cmd.Flags().BoolVar(&keep, "keep", true, "on a terminal, keep the dev server up after the session until Ctrl-C")
	return cmd
}

// offline is true when the config needs OpenAI's key and none is set.
func offline(cfg *config.Config) bool {
	for _, a := range cfg.Agents {
		env := a.Backend.APIKeyEnv
		if env == "" {
			env = llm.DefaultAPIKeyEnv
		}
		if a.Backend.BaseURL == "" && os.Getenv(env) == "" {
			return true
		}
	}
	return false
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

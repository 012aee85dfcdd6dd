package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/step"
	"github.com/conclave-ai/conclave/internal/devserver"
	"github.com/conclave-ai/conclave/worker"
)

type devFlags struct {
	storage, db  string
	port, uiPort int
	log          logFlags
	egress       egressFlags
	tools        toolFlags
}

func (f *devFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.storage, "storage", os.Getenv("CONCLAVE_STORAGE"), "session storage (default ./.conclave)")
	cmd.Flags().StringVar(&f.db, "db", defaultDevDB(), "dev server database file (sessions survive restarts)")
	cmd.Flags().IntVar(&f.port, "port", 7233, "Temporal gRPC port (a free one if taken)")
	cmd.Flags().IntVar(&f.uiPort, "ui-port", 8233, "Web UI port (a free one if taken)")
	// Warnings only by default: the worker shares the terminal with the
	// session's progress.
	f.log.add(cmd, "warn")
	f.egress.add(cmd, os.Getenv)
	f.tools.add(cmd, true)
}

// devEnv is a running dev server plus an in-process worker.
type devEnv struct {
	server *devserver.Server
	client client.Client
	worker sdkworker.Worker
	store  string
}

func (e *devEnv) close() {
	if e.worker != nil {
		e.worker.Stop()
	}
	if e.client != nil {
		e.client.Close()
	}
	if e.server != nil {
		e.server.Stop()
	}
}

// startDev starts the Temporal dev server from ./bin and a worker.
func startDev(ctx context.Context, f devFlags, models step.ModelFactory, out io.Writer) (*devEnv, error) {
	egress, err := f.egress.egress()
	if err != nil {
		return nil, err
	}
	registry, err := f.tools.registry(egress)
	if err != nil {
		return nil, err
	}
	logger, err := f.log.logger(os.Stderr)
	if err != nil {
		return nil, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	bin, err := devserver.FindBinary(wd)
	if err != nil {
		return nil, err
	}
	env := &devEnv{}
	fmt.Fprintln(out, "starting the Temporal dev server…")
	env.server, err = devserver.Start(ctx, devserver.Config{
		Binary: bin, Port: portOrFree(f.port), UIPort: portOrFree(f.uiPort), DBFile: f.db,
	})
	if err != nil {
		return nil, err
	}
	st, err := worker.OpenStorage(ctx, f.storage)
	if err != nil {
		env.close()
		return nil, err
	}
	env.store = st.Location()
	o, err := withCodec(client.Options{HostPort: env.server.HostPort, Namespace: env.server.Namespace,
		Logger: log.NewStructuredLogger(logger)})
	if err != nil {
		env.close()
		return nil, err
	}
	env.client, err = client.Dial(o)
	if err != nil {
		env.close()
		return nil, err
	}
	dep := worker.Deployment{Name: worker.DefaultDeployment, BuildID: buildID()}
	env.worker = worker.New(env.client, worker.Options{Store: st, Namespace: env.server.Namespace, Models: models, Egress: egress, Tools: registry,
		Deployment: dep})
	if err := env.worker.Start(); err != nil {
		env.close()
		return nil, err
	}
	// The dev server is this process's own: the build running now takes
	// new sessions even when an earlier build made itself current in the
	// same database file.
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := worker.MakeCurrent(pctx, env.client, dep, true); err != nil {
		env.close()
		return nil, err
	}
	return env, nil
}

// portOrFree keeps the conventional port when it is free: people expect
// the Web UI on 8233.
func portOrFree(p int) int {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return 0
	}
	l.Close()
	return p
}

func newDevCmd() *cobra.Command {
	var f devFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Start a Temporal dev server and a worker with local storage, until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			env, err := startDev(cmd.Context(), f, nil, out)
			if err != nil {
				return err
			}
			defer env.close()
			team := "examples/demo.yaml"
			if os.Getenv(llm.DefaultAPIKeyEnv) == "" {
				// examples/demo.yaml would fail at once without a key: offer
				// the offline team instead, served by this process.
				url, stop, err := startDemoModel(out)
				if err != nil {
					return err
				}
				defer stop()
				if team, err = writeOfflineTeam(filepath.Dir(f.db), url); err != nil {
					return err
				}
			}
			fmt.Fprintf(out, "Temporal: %s (namespace %s)\nWeb UI:   %s\nStorage:  %s\nWorker:   task queue %q\n\n"+
				"Start a session in another terminal:\n  %s\n"+
				"Press Ctrl-C to stop.\n", env.server.HostPort, env.server.Namespace, env.server.UIURL, env.store,
				worker.DefaultTaskQueue, devRunHint(env.server.HostPort, env.server.UIURL, team))
			<-cmd.Context().Done()
			fmt.Fprintln(out, "stopping")
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

// writeOfflineTeam writes a three-agent config on the offline demo model
// at url into dir and returns its path.
func writeOfflineTeam(dir, url string) (string, error) {
	var b strings.Builder
	b.WriteString("# Written by `conclave dev` without OPENAI_API_KEY: the built-in offline\n" +
		"# demo model, served by that `conclave dev` process while it runs.\nagents:\n")
	for _, id := range []string{"analyst", "critic", "writer"} {
		fmt.Fprintf(&b, "  - id: %s\n    backend: {type: openai, model: demo-%s, base_url: %s}\n", id, id, url)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "offline-team.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("write the offline team: %w", err)
	}
	return path, nil
}

// defaultUI is the Web UI address run's links assume (--ui, CONCLAVE_UI).
const defaultUI = "http://127.0.0.1:8233"

// devRunHint is the command that starts a session on this dev server; it
// names the Web UI when that is not where run's links point by default
// (--ui-port, or 8233 taken).
func devRunHint(hostPort, ui, team string) string {
	env := "TEMPORAL_ADDRESS=" + hostPort
	if ui != defaultUI && ui != "http://localhost:8233" {
		env += " CONCLAVE_UI=" + ui
	}
	return fmt.Sprintf("%s ./bin/conclave run --config %s \"your task\"", env, team)
}

// devCommand is the command that serves the dev database db again.
func devCommand(db string) string {
	if db == defaultDevDB() {
		return "./bin/conclave dev"
	}
	return "./bin/conclave dev --db " + shellWord(db)
}

func defaultDevDB() string { return filepath.Join(worker.DefaultStorage, "dev", "temporal.db") }

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/+:=@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

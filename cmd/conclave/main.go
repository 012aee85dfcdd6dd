// Command conclave runs MassGen-style multi-agent coordination: step mode
// for external orchestrators, and (with a Temporal cluster) durable sessions.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// exitError carries a specific exit code (seed 000: 2 means "no action").
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: tests call it with their own streams.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(massgenAlias(stepAlias(args)))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	verbose, _ := root.PersistentFlags().GetBool("verbose")
	// An error may quote a model, a tool server or a file: what a terminal
	// would act on is neutralised, wherever stderr goes.
	fmt.Fprintln(stderr, "conclave:", terminalText(errorText(err, verbose)))
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "conclave",
		Short:         "Durable multi-agent coordination on Temporal",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.PersistentFlags().Bool("verbose", false, "on failure, print the whole error chain, not only its cause")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newSessionCmd(), newStepCmd(), newWorkerCmd(), newRunCmd(), newDemoModelCmd(), newDevCmd(), newDemoCmd(), newPipelineCmd())
	root.AddCommand(newCodecServerCmd(), newBenchCmd(), newValidateCmd(), newServeCmd(), newToolServerCmd())
	root.AddCommand(newManageCmds()...)
	return root
}

// errorText is what a failed command prints: one cause, once, in a line,
// unless verbose asks for the whole chain.
func errorText(err error, verbose bool) string {
	var d *detailedError
	isDetailed := errors.As(err, &d) && d.err != nil
	if verbose {
		if isDetailed {
			return err.Error() + "\n  detail: " + d.err.Error()
		}
		return err.Error()
	}
	msg := err.Error()
	if !isDetailed {
		msg = dedupe(msg)
	}
	if isDetailed || msg != err.Error() {
		msg += " (--verbose for details)"
	}
	return msg
}

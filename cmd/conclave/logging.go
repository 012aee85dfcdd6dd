package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
)

// logFlags choose how long-running commands (worker, dev) log: one slog
// format for Conclave's own records and the Temporal SDK's.
type logFlags struct {
	level, format string
}

func (f *logFlags) add(cmd *cobra.Command, level string) {
	cmd.Flags().StringVar(&f.level, "log-level", envOr("CONCLAVE_LOG_LEVEL", level), "debug, info, warn or error (env CONCLAVE_LOG_LEVEL)")
	cmd.Flags().StringVar(&f.format, "log-format", envOr("CONCLAVE_LOG_FORMAT", "text"), "text (logfmt) or json, one record a line (env CONCLAVE_LOG_FORMAT)")
}

// logger builds the logger the flags describe, writing to w.
func (f *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: give debug, info, warn or error", f.level)
	}
	o := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(f.format) {
	case "text", "logfmt":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format %q: give text or json", f.format)
}

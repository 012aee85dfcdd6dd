package step

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/tools"
)

// Variables with which a worker's operator changes a step's Limits (the
// limits of a model call are engine/llm's).
const (
	EnvMaxWorkspaceFiles = "CONCLAVE_MAX_WORKSPACE_FILES"
	EnvMaxWorkspaceBytes = "CONCLAVE_MAX_WORKSPACE_BYTES"
	EnvMaxTraceBytes     = "CONCLAVE_MAX_TRACE_BYTES"
)

// Limits bound what one step can store: its workspace (checked as files
// are written) and its transcript (checked at every checkpoint). Zero
// fields take the defaults.
type Limits struct {
	Workspace  tools.WorkspaceLimits
	TraceBytes int64
}

// LimitsFromEnv reads the operator's Limits through getenv; an unset
// variable keeps the default, a malformed one is an error naming it.
func LimitsFromEnv(getenv func(string) string) (Limits, error) {
	var l Limits
	for _, v := range []struct {
		name string
		min  int64
		def  int64
		set  func(int64)
	}{
		{EnvMaxWorkspaceFiles, 1, tools.DefaultWorkspaceFiles, func(n int64) { l.Workspace.Files = int(n) }},
		{EnvMaxWorkspaceBytes, 1 << 10, tools.DefaultWorkspaceBytes, func(n int64) { l.Workspace.Bytes = n }},
		{EnvMaxTraceBytes, 1 << 20, agent.DefaultTraceBytes, func(n int64) { l.TraceBytes = n }},
	} {
		raw := strings.TrimSpace(getenv(v.name))
		if raw == "" {
			continue
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < v.min || n > 1<<40 {
			return Limits{}, fmt.Errorf("%s=%q is not a whole number of at least %d, e.g. %d", v.name, raw, v.min, v.def)
		}
		v.set(n)
	}
	return l, nil
}

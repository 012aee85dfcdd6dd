package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/pipeline"
)

// hostile is an error text a model can write into a step's result: fake
// progress lines, a line clear and a window-title escape.
const hostile = "boom\nstep 2 · deploy completed\r\n== completed\x1b[2K\x1b]0;pwned\a\u2028done"

func requireOneSafeLine(t *testing.T, s string) {
	t.Helper()
	require.Equal(t, 1, strings.Count(s, "\n")+boolInt(!strings.HasSuffix(s, "\n")), "one line: %q", s)
	for _, r := range strings.TrimSuffix(s, "\n") {
		require.False(t, r < 0x20 || r == 0x7f || r == '\u2028', "control character %U in %q", r, s)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestProgressLinesNeutraliseModelText(t *testing.T) {
	line := stepLine(contract.PipelineStepEntry{Seq: 1, Name: "build", Status: pipeline.Failed, Error: hostile, Evidence: []string{"a\nb.png"}})
	requireOneSafeLine(t, line)
	require.Contains(t, line, "error: boom step 2 · deploy completed == completed␛[2K␛]0;pwned done")

	out := progress(coord.Status{Phase: "coordinating", Agents: map[string]coord.AgentStatus{
		"agent_a": {State: coord.StateFailed, FailReason: hostile},
	}}, nil)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2, "totals and one agent line: %q", out)
	requireOneSafeLine(t, lines[1])

	var is issues
	rep := is.report([]issue{{"k", hostile}})
	requireOneSafeLine(t, rep)
}

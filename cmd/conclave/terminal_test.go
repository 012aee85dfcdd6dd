package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/workflows"
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
	}}, nil, nil)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2, "totals and one agent line: %q", out)
	requireOneSafeLine(t, lines[1])

	var is issues
	rep := is.report([]issue{{"k", hostile}})
	requireOneSafeLine(t, rep)
}

// The final answer printed by `conclave run` keeps its lines but no
// control character, C1 control or bidirectional override; MassGen's
// one-line preview is one safe line; `conclave answer` piped to a file or
// a program gets the text as written.
func TestFinalAnswerIsNeutralisedOnTheTerminal(t *testing.T) {
	answer := "Title\n\x1b[2J\x1b]0;owned\a line two\rfake\x00\x7f\u009b31m\u202eevil\nend"
	var b strings.Builder
	printResult(&b, workflows.CoordinationResult{Status: "consensus", Winner: "agent_a", FinalAnswer: answer}, "http://ui")
	out := b.String()
	for _, r := range out {
		require.False(t, (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e), "control %U in %q", r, out)
	}
	require.Contains(t, out, "Title\n␛[2J␛]0;owned  line two\nfake")
	require.Contains(t, out, "evil\nend")

	preview := oneLine(answer, 200)
	requireOneSafeLine(t, preview)

	var piped strings.Builder
	require.Equal(t, answer, textFor(&piped, answer), "piped output is the text as written")
}

// JSON printed for programs and terminals (MassGen's PROGRESS lines,
// `conclave status`, `session status`) escapes DEL, C1 controls and bidi
// overrides, which encoding/json writes raw, and still means the same.
func TestJSONOutputEscapesWhatTerminalsActOn(t *testing.T) {
	reason := "model said \u009b2J\u009d0;t\u009c\u0085\u202eevil\u2066\u007f"
	line := compactJSON(coord.Status{Phase: "coordinating", Agents: map[string]coord.AgentStatus{"agent_a": {State: coord.StateFailed, FailReason: reason}}})
	for _, r := range line {
		require.False(t, r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069), "raw %U in %q", r, line)
	}
	var back coord.Status
	require.NoError(t, json.Unmarshal([]byte(line), &back))
	require.Equal(t, reason, back.Agents["agent_a"].FailReason, "the same text once decoded")

	var b strings.Builder
	require.NoError(t, json.NewEncoder(jsonOut{&b}).Encode(map[string]string{"x": reason}))
	require.Contains(t, b.String(), `\u009b2J`)
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/pipelinetest"
)

// Bad pipeline invocations fail before any connection is made, with a
// message naming the problem.
func TestPipelineRunRejectsBadInvocations(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "scenario")
	require.NoError(t, pipelinetest.WriteScenario(scenario, 2, 50))
	one := filepath.Join(dir, "one.yaml")
	require.NoError(t, os.WriteFile(one, []byte("agent:\n  id: a\n  backend: {type: openai, model: m}\n"), 0o644))
	two := filepath.Join(dir, "two.yaml")
	require.NoError(t, os.WriteFile(two, []byte("agents:\n  - {id: a, backend: {type: openai, model: m}}\n  - {id: b, backend: {type: openai, model: m}}\n"), 0o644))
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("start: a\nbackend: {type: openai, model: m}\nsteps:\n  - {name: a, prompt: A, next: b}\n"), 0o644))
	huge := filepath.Join(dir, "huge")
	require.NoError(t, pipelinetest.WriteScenario(huge, 2, 50))
	require.NoError(t, os.WriteFile(filepath.Join(huge, "prd.md"), bytes.Repeat([]byte("# PRD\n"), 600<<10), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"huge project document", []string{"--scenario", huge, "--config", one, "x"}, "definition.context: the project document is 3686400 bytes (3.5 MiB); at most 262144 bytes"},
		{"huge input", []string{"--scenario", scenario, "--config", one, string(bytes.Repeat([]byte("i"), 70<<10))}, "input: 71680 bytes (70.0 KiB); at most 65536 bytes"},
		{"nothing", []string{"x"}, "give --pipeline FILE or --scenario DIR"},
		{"both", []string{"--pipeline", bad, "--scenario", scenario, "x"}, "not both"},
		{"scenario without agent", []string{"--scenario", scenario, "x"}, "--scenario needs --config"},
		{"two agents", []string{"--scenario", scenario, "--config", two, "x"}, "has 2 agents"},
		{"bad graph", []string{"--pipeline", bad, "x"}, `next "b" is not a step`},
		{"missing scenario", []string{"--scenario", filepath.Join(dir, "nope"), "--config", one, "x"}, "meta.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"pipeline", "run", "--address", "127.0.0.1:1"}, tc.args...)
			code := run(context.Background(), args, &out, &errb)
			require.Equal(t, 1, code)
			require.Contains(t, errb.String(), tc.want)
			require.Empty(t, out.String(), "nothing starts")
		})
	}
}

package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/config"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// fiveSteps is a scenario directory in seed 004's shape.
func fiveSteps(t *testing.T) string {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"meta.yaml": `title: Ship the landing page
steps:
  - {id: plan, title: Plan, file: 01-plan.md}
  - {id: build, title: Build, file: 02-build.md}
  - {id: test, title: Test, file: 03-test.md}
  - {id: fix, title: Fix, file: 04-fix.md}
  - {id: release, title: Release, file: 05-release.md}
`,
		"steps/01-plan.md": "Plan it.", "steps/02-build.md": "Build it.", "steps/03-test.md": "Test it.",
		"steps/04-fix.md": "Fix it.", "steps/05-release.md": "Release it.",
		"prd.md": "# PRD\nA landing page.",
	})
	return dir
}

func TestLoadScenarioIsLinear(t *testing.T) {
	d, err := LoadScenario(fiveSteps(t), &config.Backend{Type: "openai", Model: "m"})
	require.NoError(t, err)
	require.Equal(t, "Ship the landing page", d.Title)
	require.Equal(t, "plan", d.Graph.Start)
	require.Equal(t, "# PRD\nA landing page.", d.Context)
	var order []string
	s := Begin(d.Graph)
	for !s.Done {
		order = append(order, s.Current)
		s = advance(t, d.Graph, s, Result{Status: Completed})
	}
	require.Equal(t, []string{"plan", "build", "test", "fix", "release"}, order)
	step, _ := d.Graph.Step("test")
	require.Equal(t, "Test it.", step.Prompt)

	// Step 3 fails: the run stops there (seed 004: stop on failure).
	s = Begin(d.Graph)
	s = advance(t, d.Graph, s, Result{Status: Completed})
	s = advance(t, d.Graph, s, Result{Status: Completed})
	s = advance(t, d.Graph, s, Result{Status: Failed})
	require.True(t, s.Done)
	require.Equal(t, "failed", s.Outcome)
}

func TestLoadScenarioErrors(t *testing.T) {
	cases := map[string]struct {
		files map[string]string
		want  string
	}{
		"missing step file": {map[string]string{"meta.yaml": "steps:\n  - {id: a, file: nope.md}\n"}, "nope.md"},
		"escaping file":     {map[string]string{"meta.yaml": "steps:\n  - {id: a, file: ../../etc/passwd}\n"}, "leaves"},
		"bad id":            {map[string]string{"meta.yaml": "steps:\n  - {id: A/B, file: a.md}\n", "steps/a.md": "x"}, `id "A/B"`},
		"duplicate id":      {map[string]string{"meta.yaml": "steps:\n  - {id: a, file: a.md}\n  - {id: a, file: a.md}\n", "steps/a.md": "x"}, "declared twice"},
		"unknown key":       {map[string]string{"meta.yaml": "stepz: []\n"}, "stepz"},
		"no steps":          {map[string]string{"meta.yaml": "title: t\n"}, "no steps"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, c.files)
			_, err := LoadScenario(dir, nil)
			require.ErrorContains(t, err, c.want)
		})
	}
	_, err := LoadScenario(filepath.Join(t.TempDir(), "missing"), nil)
	require.ErrorContains(t, err, "meta.yaml")
}

func TestLoadPipeline(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"pipeline.yaml": `title: Lint loop
start: main
context: context.md
backend: {type: openai, model: gpt-4o-mini}
steps:
  - name: main
    prompt_file: prompts/main.md
    tools: [read_file, write_file]
    next: lint
    destinations: [lint, export]
  - name: lint
    prompt: Run the linter.
    destinations: [main]
    on_failure: main
  - name: export
    prompt: Export.
    backend: {type: openai, model: other}
`,
		"prompts/main.md": "Write the code.",
		"context.md":      "Project context.",
	})
	d, err := LoadPipeline(filepath.Join(dir, "pipeline.yaml"))
	require.NoError(t, err)
	require.Equal(t, "Project context.", d.Context)
	main, _ := d.Graph.Step("main")
	require.Equal(t, "Write the code.", main.Prompt)
	require.Equal(t, []string{"read_file", "write_file"}, main.Tools)
	export, _ := d.Graph.Step("export")
	require.Equal(t, "other", export.Backend.Model)
}

func TestLoadPipelineErrors(t *testing.T) {
	base := "start: a\nbackend: {type: openai, model: m}\nsteps:\n"
	cases := map[string]struct{ yaml, want string }{
		"unknown step in next":   {base + "  - {name: a, prompt: p, next: ghost}\n", `next "ghost"`},
		"undeclared destination": {base + "  - {name: a, prompt: p, destinations: [b]}\n", `destination "b"`},
		"unreachable":            {base + "  - {name: a, prompt: p}\n  - {name: b, prompt: p}\n", "not reachable"},
		"unknown start":          {"start: z\nbackend: {type: openai, model: m}\nsteps:\n  - {name: a, prompt: p}\n", `start step "z"`},
		"unknown tool":           {base + "  - {name: a, prompt: p, tools: [rm_rf]}\n", `unknown tool "rm_rf"`},
		"both prompts":           {base + "  - {name: a, prompt: p, prompt_file: f.md}\n", "not both"},
		"no prompt":              {base + "  - {name: a}\n", "no prompt"},
		"escaping prompt file":   {base + "  - {name: a, prompt_file: ../x.md}\n", "leaves"},
		"unknown key":            {base + "  - {name: a, prompt: p, nxt: b}\n", "nxt"},
		"no backend anywhere":    {"start: a\nsteps:\n  - {name: a, prompt: p}\n", "no backend"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"p.yaml": c.yaml})
			_, err := LoadPipeline(filepath.Join(dir, "p.yaml"))
			require.ErrorContains(t, err, c.want)
		})
	}
}

// A pipeline file's backends are checked as a config's are, and its keys as
// strictly, each problem with its line: all of them in one pass.
func TestLoadPipelineChecksLikeAConfig(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"p.yaml": `start: a
backend:
  type: openai
  model: m
  base_url: http://alice:hunter2@127.0.0.1:1/v1
  api_key: sk-live-x
  extra_body: {model: evil, messages: [], stream: false}
steps:
  - name: a
    prompt: p
    next: b
    backend: {model: m, temperature: 9}
  - name: b
    prompt: p
    backend:
      type: claude_code
      model: m
  - name: c
    promt: p
`})
	_, err := LoadPipeline(filepath.Join(dir, "p.yaml"))
	require.Error(t, err)
	msg := err.Error()
	p := filepath.Join(dir, "p.yaml")
	for _, want := range []string{
		p + ":5: backend.base_url: must not contain a user or password",
		p + ":6: backend.api_key: API keys do not belong in the config",
		p + `:7: backend.extra_body.model: Conclave sets this request field itself`,
		p + `:7: backend.extra_body.messages: Conclave sets this request field itself`,
		p + `:12: steps[0].backend.temperature: 9 is out of range`,
		p + `:16: steps[1].backend.type: backend type "claude_code" is not supported`,
		p + `:19: unknown key "promt" in steps[2] (did you mean "prompt"?)`,
	} {
		require.Contains(t, msg, want)
	}
	require.NotContains(t, msg, "hunter2")
	require.NotContains(t, msg, "not found in type")
}

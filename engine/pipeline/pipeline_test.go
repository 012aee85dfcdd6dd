package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/llm"
)

// seedGraph is seed 002's complete setup: main may jump/call lint or
// export, lint may go back to main; main falls back to lint.
func seedGraph() Graph {
	return Graph{Start: "main", Steps: []Step{
		{Name: "main", Next: "lint", Destinations: []string{"lint", "export"}},
		{Name: "lint", Destinations: []string{"main"}},
		{Name: "export"},
	}}
}

func advance(t *testing.T, g Graph, s State, r Result) State {
	t.Helper()
	next, err := Advance(g, s, r)
	require.NoError(t, err)
	return next
}

func TestNextStepJump(t *testing.T) {
	g := seedGraph()
	require.NoError(t, g.Validate())
	s := Begin(g)
	require.Equal(t, "main", s.Current)
	s = advance(t, g, s, Result{Status: Completed, Summary: "done"})
	require.Equal(t, "lint", s.Current, "main → lint by NextStepJump")
	require.Nil(t, s.Resume)
	s = advance(t, g, s, Result{Status: Completed})
	require.True(t, s.Done)
	require.Equal(t, "completed", s.Outcome)
	require.Equal(t, 2, s.Seq)
}

func TestJumpDiscardsTheCaller(t *testing.T) {
	g := seedGraph()
	s := advance(t, g, Begin(g), Result{Status: Completed, Request: &Request{Kind: KindJump, Target: "export"}})
	require.Equal(t, "export", s.Current)
	require.Empty(t, s.Stack, "a jump leaves nothing to return to")
	s = advance(t, g, s, Result{Status: Completed, Summary: "exported"})
	require.True(t, s.Done, "export has no next and nobody to return to: main never resumes")
}

func TestCallRestoresCallerMessages(t *testing.T) {
	g := seedGraph()
	before := []llm.Message{
		{Role: "system", Content: "s"}, {Role: "user", Content: "u"},
		{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "1", Name: "write_file", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "1", Content: "ok"},
		{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "2", Name: "call_step", Arguments: `{"step":"lint"}`}}},
		{Role: "tool", ToolCallID: "2", Content: "calling lint"},
	}
	s := advance(t, g, Begin(g), Result{Status: CallPending, Request: &Request{Kind: KindCall, Target: "lint"}, Messages: before})
	require.Equal(t, "lint", s.Current)
	require.Len(t, s.Stack, 1)
	s = advance(t, g, s, Result{Status: Completed, Summary: "2 warnings fixed"})
	require.Equal(t, "main", s.Current, "the caller resumes")
	require.Empty(t, s.Stack)
	want := append(append([]llm.Message(nil), before...), llm.Message{Role: "user", Content: "[Called step completed with result: 2 warnings fixed]"})
	require.Equal(t, want, s.Resume)
	s = advance(t, g, s, Result{Status: Completed})
	require.Equal(t, "lint", s.Current, "main then follows its own NextStepJump")
	require.Nil(t, s.Resume)
}

func TestDestinationNotAllowed(t *testing.T) {
	g := seedGraph()
	_, err := ParseTarget(g, "main", ToolJump, `{"step":"main"}`)
	require.ErrorContains(t, err, `"main" is not a destination of step "main"; use one of: lint, export`)
	_, err = ParseTarget(g, "export", ToolCall, `{"step":"lint"}`)
	require.ErrorContains(t, err, "cannot go to other steps")
	got, err := ParseTarget(g, "lint", ToolCall, `{"step":"main"}`)
	require.NoError(t, err)
	require.Equal(t, "main", got)
	for _, bad := range []string{`{"step":1}`, `{"stp":"lint"}`, `{"step":"lint"} x`, `[`} {
		_, err := ParseTarget(g, "main", ToolJump, bad)
		require.ErrorContains(t, err, "jump_to_step", bad)
	}
	_, err = Advance(g, Begin(g), Result{Status: Completed, Request: &Request{Kind: KindJump, Target: "main"}})
	require.ErrorContains(t, err, "may not jump")
}

func TestSpecs(t *testing.T) {
	g := seedGraph()
	names := func(step string) []string {
		var n []string
		for _, s := range Specs(g, step) {
			n = append(n, s.Name)
		}
		return n
	}
	require.Equal(t, []string{ToolJump, ToolCall, ToolComplete}, names("main"))
	require.Equal(t, []string{ToolComplete}, names("export"))
	enum := Specs(g, "main")[0].Parameters["properties"].(map[string]any)["step"].(map[string]any)["enum"]
	require.Equal(t, []string{"lint", "export"}, enum)
}

func TestFailuresFollowOnFailure(t *testing.T) {
	cases := []struct {
		onFailure string
		status    Status
		current   string
		done      bool
		outcome   string
	}{
		{"", MaxIterations, "a", true, "failed"},
		{"stop", Failed, "a", true, "failed"},
		{"continue", Error, "b", false, ""},
		{"fix", Failed, "fix", false, ""},
		{"fix", Cancelled, "a", true, "cancelled"},
	}
	for _, c := range cases {
		g := Graph{Start: "a", Steps: []Step{{Name: "a", Next: "b", OnFailure: c.onFailure}, {Name: "b"}, {Name: "fix", Next: "a"}}}
		if c.onFailure != "fix" {
			g.Steps = g.Steps[:2]
		}
		require.NoError(t, g.Validate())
		s := advance(t, g, Begin(g), Result{Status: c.status})
		require.Equal(t, c.done, s.Done, "%+v", c)
		require.Equal(t, c.outcome, s.Outcome, "%+v", c)
		if !c.done {
			require.Equal(t, c.current, s.Current, "%+v", c)
		}
	}
}

func TestJumpLoopStopsAtMaxSteps(t *testing.T) {
	g := Graph{Start: "a", MaxSteps: 7, Steps: []Step{
		{Name: "a", Destinations: []string{"b"}}, {Name: "b", Destinations: []string{"a"}}}}
	s := Begin(g)
	for !s.Done {
		other := map[string]string{"a": "b", "b": "a"}[s.Current]
		s = advance(t, g, s, Result{Status: Completed, Request: &Request{Kind: KindJump, Target: other}})
	}
	require.Equal(t, "max_steps", s.Outcome)
	require.Equal(t, 7, s.Seq)
	_, err := Advance(g, s, Result{Status: Completed})
	require.ErrorContains(t, err, "already done")
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		g    Graph
		want []string
	}{
		"empty":         {Graph{Start: "x"}, []string{"no steps"}},
		"unknown start": {Graph{Start: "nope", Steps: []Step{{Name: "a"}}}, []string{`start step "nope"`}},
		"unknown next":  {Graph{Start: "a", Steps: []Step{{Name: "a", Next: "ghost"}}}, []string{`step "a": next "ghost" is not a step`}},
		"undeclared destination": {Graph{Start: "a", Steps: []Step{{Name: "a", Destinations: []string{"b", "zzz"}}, {Name: "b"}}},
			[]string{`destination "zzz"`}},
		"unreachable": {Graph{Start: "a", Steps: []Step{{Name: "a", Next: "b"}, {Name: "b"}, {Name: "island"}, {Name: "atoll"}}},
			[]string{"not reachable", "atoll, island"}},
		"duplicate":   {Graph{Start: "a", Steps: []Step{{Name: "a"}, {Name: "a"}}}, []string{`"a" is declared twice`}},
		"bad failure": {Graph{Start: "a", Steps: []Step{{Name: "a", OnFailure: "retry"}}}, []string{`on_failure "retry"`}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := c.g.Validate()
			for _, w := range c.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestParseComplete(t *testing.T) {
	c, err := ParseComplete(`{"status":"pass","evidence":["out/report.md"]}`)
	require.NoError(t, err)
	require.Equal(t, []string{"out/report.md"}, c.Evidence)
	for bad, want := range map[string]string{
		`{"status":"done"}`:                "pass or fail",
		`{"status":"fail"}`:                "needs an error",
		`{"status":"pass","x":1}`:          "unknown field",
		`{"status":"pass","evidence":"a"}`: "not valid",
	} {
		_, err := ParseComplete(bad)
		require.ErrorContains(t, err, want, bad)
	}
}

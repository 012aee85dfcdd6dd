package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/llm"
)

// run drives Next through results, returning the steps run in order and the
// final state.
func run(t *testing.T, g Graph, results ...func(*State) Result) ([]string, State) {
	t.Helper()
	s := Begin(g)
	order := []string{s.Current}
	for _, res := range results {
		var step string
		var done bool
		s, step, done = Next(g, s, res(&s))
		if done {
			require.Empty(t, step)
			return order, s
		}
		order = append(order, step)
	}
	return order, s
}

func completed(summary string) func(*State) Result {
	return func(*State) Result { return Result{Status: Completed, Summary: summary} }
}

func TestNextSeedFlows(t *testing.T) {
	g := seedGraph()
	jump := func(to string) func(*State) Result {
		return func(*State) Result { return Result{Status: Completed, Request: &Request{Kind: KindJump, Target: to}} }
	}
	call := func(to string) func(*State) Result {
		return func(*State) Result { return Result{Status: CallPending, Request: &Request{Kind: KindCall, Target: to}} }
	}
	cases := []struct {
		name    string
		results []func(*State) Result
		order   []string
		outcome string
	}{
		{"main → lint by NextStepJump", []func(*State) Result{completed(""), completed("")}, []string{"main", "lint"}, "completed"},
		{"jump discards the caller", []func(*State) Result{jump("export"), completed("")}, []string{"main", "export"}, "completed"},
		{"call returns to the caller", []func(*State) Result{call("lint"), completed("ok"), completed(""), completed("")},
			[]string{"main", "lint", "main", "lint"}, "completed"},
		{"lint jumps back to main", []func(*State) Result{completed(""), jump("main"), completed(""), completed("")},
			[]string{"main", "lint", "main", "lint"}, "completed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			order, s := run(t, g, c.results...)
			require.Equal(t, c.order, order)
			require.True(t, s.Done)
			require.Equal(t, c.outcome, s.Outcome)
			require.Empty(t, s.Stack)
		})
	}
}

func TestNextCallRestoresExactMessages(t *testing.T) {
	g := seedGraph()
	saved := []llm.Message{
		{Role: llm.RoleSystem, Content: "s"}, {Role: llm.RoleUser, Content: "u"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: ToolCall, Arguments: `{"step":"lint"}`}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: "calling lint"},
	}
	s, step, done := Next(g, Begin(g), Result{Status: CallPending, Request: &Request{Kind: KindCall, Target: "lint"}, Messages: saved})
	require.False(t, done)
	require.Equal(t, "lint", step)
	require.Equal(t, []Frame{{Step: "main", Messages: saved}}, s.Stack)

	s, step, _ = Next(g, s, Result{Status: Completed, Summary: "no lint errors"})
	require.Equal(t, "main", step)
	want := []llm.Message{
		{Role: llm.RoleSystem, Content: "s"}, {Role: llm.RoleUser, Content: "u"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: ToolCall, Arguments: `{"step":"lint"}`}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: "calling lint"},
		{Role: llm.RoleUser, Content: "[Called step completed with result: no lint errors]"},
	}
	require.Equal(t, want, s.Resume)
	require.Equal(t, want, ResumeMessages(Frame{Step: "main", Messages: saved}, "no lint errors"))
	require.Len(t, saved, 4, "the saved frame is copied, not appended to")
}

func TestParseTargetRefusals(t *testing.T) {
	g := seedGraph()
	_, err := ParseTarget(g, "main", ToolJump, `{"step": "main"}`)
	require.EqualError(t, err, `jump_to_step: "main" is not a destination of step "main"; use one of: lint, export`)
	_, err = ParseTarget(g, "export", ToolCall, `{"step": "lint"}`)
	require.ErrorContains(t, err, "cannot go to other steps")
	to, err := ParseTarget(g, "main", ToolCall, `{"step": "export"}`)
	require.NoError(t, err)
	require.Equal(t, "export", to)
}

func TestNextFailureStatuses(t *testing.T) {
	cases := []struct {
		onFailure string
		status    Status
		step      string // "" when done
		outcome   string
	}{
		{"", MaxIterations, "", "failed"},
		{"stop", Error, "", "failed"},
		{"continue", MaxIterations, "b", ""},
		{"fix", MaxIterations, "fix", ""},
		{"fix", Cancelled, "", "cancelled"},
		{"", "bogus", "", OutcomeError},
	}
	for _, c := range cases {
		g := Graph{Start: "a", Steps: []Step{{Name: "a", Next: "b", OnFailure: c.onFailure, Destinations: []string{"b"}}, {Name: "b"}, {Name: "fix"}}}
		if c.onFailure != "fix" {
			g.Steps = g.Steps[:2]
		}
		require.NoError(t, g.Validate())
		// A failed step's jump is dropped: on_failure decides.
		next, step, done := Next(g, Begin(g), Result{Status: c.status, Request: &Request{Kind: KindJump, Target: "b"}})
		require.Equal(t, c.step, step, "%+v", c)
		require.Equal(t, c.step == "", done, "%+v", c)
		require.Equal(t, c.outcome, next.Outcome, "%+v", c)
	}
}

func TestNextGuardsJumpLoop(t *testing.T) {
	g := Graph{Start: "a", Steps: []Step{{Name: "a", Destinations: []string{"b"}}, {Name: "b", Destinations: []string{"a"}}}}
	s, done := Begin(g), false
	for !done {
		to := map[string]string{"a": "b", "b": "a"}[s.Current]
		s, _, done = Next(g, s, Result{Status: Completed, Request: &Request{Kind: KindJump, Target: to}})
	}
	require.Equal(t, DefaultMaxSteps, s.Seq)
	require.Equal(t, OutcomeMaxSteps, s.Outcome)
	require.Contains(t, s.Reason, "stopped after 100 steps")
	again, step, done := Next(g, s, Result{Status: Completed})
	require.Equal(t, s, again, "a finished run stays finished")
	require.True(t, done)
	require.Empty(t, step)
}

func TestValidateNamesSteps(t *testing.T) {
	g := Graph{Start: "a", Steps: []Step{
		{Name: "a", Next: "b", Destinations: []string{"ghost"}, OnFailure: "phantom"},
		{Name: "b"}, {Name: "orphan"},
	}}
	err := g.Validate()
	for _, want := range []string{`step "a": destination "ghost" is not a step`, `step "a": on_failure "phantom" is not a step`,
		`steps not reachable from start "a": orphan`} {
		require.ErrorContains(t, err, want)
	}
	g.Start = "nowhere"
	require.ErrorContains(t, g.Validate(), `start step "nowhere" is not a step`)
}

func TestStateJSONRoundTrip(t *testing.T) {
	g := seedGraph()
	s, _, _ := Next(g, Begin(g), Result{Status: CallPending, Request: &Request{Kind: KindCall, Target: "lint"},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "u"}}})
	for _, st := range []State{s, {Current: "a", Seq: 3, Done: true, Outcome: OutcomeMaxSteps, Reason: "r"}} {
		data, err := json.Marshal(st)
		require.NoError(t, err)
		var back State
		require.NoError(t, json.Unmarshal(data, &back))
		require.Equal(t, st, back)
	}
}

// FuzzNext drives random requests and results through Next: it never
// panics, never names a step the graph lacks, and keeps its step budget.
func FuzzNext(f *testing.F) {
	f.Add([]byte{0x10, 0x31, 0x02, 0x53, 0x04, 0x75, 0x06})
	f.Fuzz(func(t *testing.T, script []byte) {
		g := seedGraph()
		g.MaxSteps = 15
		statuses := []Status{Completed, Cancelled, Error, MaxIterations, CallPending, Failed, NotRun, "bogus"}
		s := Begin(g)
		for _, b := range script {
			r := Result{Status: statuses[int(b)%len(statuses)], Summary: "x"}
			target := g.Steps[int(b>>6)%len(g.Steps)].Name
			switch b & 0x30 {
			case 0x10:
				r.Request = &Request{Kind: KindJump, Target: target}
			case 0x20:
				r.Request = &Request{Kind: KindCall, Target: target}
			}
			next, step, done := Next(g, s, r)
			require.Equal(t, done, next.Done)
			require.LessOrEqual(t, next.Seq, g.MaxSteps)
			if done {
				require.Empty(t, step)
				require.NotEmpty(t, next.Outcome)
				return
			}
			_, ok := g.Step(step)
			require.True(t, ok, "moved to %q", step)
			require.Equal(t, step, next.Current)
			s = next
		}
	})
}

package workflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
)

// The human_input update: the validator rejects empty and oversized text;
// an accepted input is stored through WriteInbox with the next seq.
func TestHumanInputUpdate(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute),
		{a, 2}: vote(a, 10*time.Minute, seen), {b, 2}: vote(a, 10*time.Minute, seen),
	})
	type outcome struct {
		rejected error
		seq      int
		err      error
	}
	got := map[string]*outcome{}
	send := func(id string, in any) {
		o := &outcome{}
		got[id] = o
		h.env.UpdateWorkflow(contract.UpdateHumanInput, id, &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { o.rejected = err },
			OnComplete: func(v any, err error) {
				o.err = err
				if n, ok := v.(int); ok {
					o.seq = n
				}
			},
		}, in)
	}
	h.env.RegisterDelayedCallback(func() {
		send("empty", HumanInput{Text: " \n\t "})
		send("long", HumanInput{Text: strings.Repeat("x", contract.MaxHumanInputBytes+1)})
		send("first", HumanInput{Text: "  Please keep it under 17 syllables.  "})
	}, 30*time.Second)
	h.env.RegisterDelayedCallback(func() { send("second", "Mention retries.") }, 3*time.Minute)
	h.run(input(testConfig(a, b)))
	require.Equal(t, coord.StatusConsensus, h.result().Status)

	require.ErrorContains(t, got["empty"].rejected, "human input is empty")
	require.ErrorContains(t, got["long"].rejected, "more than the 8192 allowed")
	require.NoError(t, got["first"].rejected)
	require.NoError(t, got["first"].err)
	require.Equal(t, 1, got["first"].seq)
	require.Equal(t, 2, got["second"].seq)
	require.Len(t, h.inbox, 2)
	require.Equal(t, contract.WriteInboxInput{SessionID: "s1", SessionRef: contract.SessionRef{Owner: &h.initIn[0].Owner, Location: "mem://s1"},
		Seq: 1, Text: "Please keep it under 17 syllables.",
		At: h.start.Add(30 * time.Second).UTC().Format(time.RFC3339)}, h.inbox[0])
	require.Equal(t, "Mention retries.", h.inbox[1].Text)
}

func TestHumanInputRejectedAfterCoordination(t *testing.T) {
	w := testCoordination(a)
	require.NoError(t, w.validateHumanInput(nil, HumanInput{Text: "hi"}))
	w.m.State.Phase = coord.PhasePresenting
	require.ErrorContains(t, w.validateHumanInput(nil, HumanInput{Text: "hi"}), "the session is presenting")
}

// A session takes a bounded number of human inputs, carried across
// continue-as-new, so a loop of `conclave say` cannot grow its history
// toward Temporal's limit.
func TestHumanInputsAreBounded(t *testing.T) {
	w := testCoordination(a)
	w.m.State.InboxSeq = contract.MaxHumanInputs - 1
	require.NoError(t, w.validateHumanInput(nil, HumanInput{Text: "hi"}))
	w.m.State.InboxSeq = contract.MaxHumanInputs
	require.ErrorContains(t, w.validateHumanInput(nil, HumanInput{Text: "hi"}), "already has 100 human inputs")
}

// Continue-as-new carries the state; the next run picks up where this one
// stopped (no new session, launch numbers go on).
func TestContinueAsNew(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	script := map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute),
		{a, 2}: vote(b, 3*time.Minute, seen), {b, 2}: vote(b, time.Minute, seen),
	}
	for _, tc := range []struct {
		name      string
		maxSteps  int
		suggested bool
		want      []string // launches of the first run
	}{
		// After 2 steps (2m) a's step 2 still runs; the run waits for it.
		{"max_steps_before_continue", 2, false, []string{"agent_a:1", "agent_b:1", "agent_a:2"}},
		// Suggested from the start: one step first (1m), then wait for b.
		{"suggested by the server", 0, true, []string{"agent_a:1", "agent_b:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, script)
			h.env.SetContinueAsNewSuggested(tc.suggested)
			h.env.RegisterDelayedCallback(func() {
				h.env.UpdateWorkflow(contract.UpdateHumanInput, "u1", &testsuite.TestUpdateCallback{
					OnAccept: func() {}, OnReject: func(err error) { t.Error(err) }, OnComplete: func(any, error) {},
				}, HumanInput{Text: "hello"})
			}, 30*time.Second)
			in := input(testConfig(a, b))
			in.MaxStepsBeforeContinue = tc.maxSteps
			h.run(in)

			err := h.env.GetWorkflowError()
			var can *workflow.ContinueAsNewError
			require.True(t, errors.As(err, &can), "want continue-as-new, got %v", err)
			require.Equal(t, contract.CoordinationName, can.WorkflowType.Name)
			var next CoordinationInput
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
			require.Equal(t, tc.want, pairs(h.launched()))

			s := next.State
			require.NotNil(t, s)
			require.Equal(t, "mem://s1", s.Session)
			require.Equal(t, len(tc.want), s.Machine.Launches)
			require.Equal(t, 1, s.Machine.InboxSeq)
			require.Equal(t, []string{a, b}, s.Machine.AnswerOrder)
			require.WithinDuration(t, h.start.Add(30*time.Minute), s.Deadline, 0)
			require.Equal(t, int64(10*len(tc.want)), s.Machine.Usage.InputTokens)
			require.Empty(t, s.Machine.Running)
			for _, ag := range s.Machine.Ledger.Agents {
				require.False(t, ag.Running)
			}
			require.Equal(t, "Write a haiku about durable execution.", next.Task)

			// The next run.
			h2 := newHarness(t, script)
			h2.env.SetStartTime(h.env.Now())
			next.MaxStepsBeforeContinue = 0
			h2.run(next)
			r := h2.result()
			require.Equal(t, coord.StatusConsensus, r.Status)
			require.Equal(t, b, r.Winner)
			require.Zero(t, h2.inits, "the session exists already")
			ls2 := h2.launched()
			require.Equal(t, len(tc.want)+1, ls2[0].Launch, "launch numbers go on")
			require.Equal(t, int64(10*(len(tc.want)+len(ls2))+100), r.Usage.InputTokens)
		})
	}
}

// The Web UI details show the agents as a Markdown table.
func TestDetailsMarkdown(t *testing.T) {
	w := testCoordination(a, b)
	w.m.State.Ledger.Agents[0] = coord.Agent{ID: a, LatestStep: 2, LatestAnswerStep: 1, AnswerCount: 1, LastAction: coord.ActionVote,
		Vote: &coord.Vote{Voter: a, Target: b, SeenSteps: map[string]int{a: 1}, Step: 2}}
	w.m.State.Ledger.Agents[1] = coord.Agent{ID: b, LatestStep: 1, LatestAnswerStep: 1, AnswerCount: 1, LastAction: coord.ActionNewAnswer, Running: true}
	w.m.State.Running = []coord.Run{{Agent: b, Step: 2, Launch: 3, Mode: coord.ModeVoting}}
	w.m.State.Launches = 3
	md := w.markdown()
	require.Contains(t, md, "**Phase:** coordinating")
	require.Contains(t, md, "| agent | state | answers | vote | step |")
	require.Contains(t, md, "| `agent_a` | voted | 1 | `agent_b` (stale) | 2 |")
	require.Contains(t, md, "| `agent_b` | running (voting) | 1 | — | 1 → 2 |")
}

// Status writes never hold coordination up: with a store that takes 20s
// per write, the first steps, a relaunch and the presentation start at
// once, and status.json still ends in phase done.
func TestSlowStatusWritesDoNotDelaySteps(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute),
		{a, 2}: vote(b, 5*time.Minute, seen), {b, 2}: vote(b, time.Minute, seen),
	})
	h.env.OnActivity(contract.NameWriteStatus, mock.Anything, mock.Anything).Return(h.writeStatus).After(20 * time.Second)
	h.run(input(testConfig(a, b)))

	require.Equal(t, coord.StatusConsensus, h.result().Status)
	ls := h.launched()
	require.Equal(t, []string{"agent_a:1", "agent_b:1", "agent_a:2", "agent_b:2"}, pairs(ls))
	require.Equal(t, []time.Duration{0, 0, time.Minute, 2 * time.Minute}, []time.Duration{ls[0].At, ls[1].At, ls[2].At, ls[3].At})
	// Votes done at 6m; the presentation did not wait for the presenting
	// write, but the final write waits for it (writes stay in order) and
	// is awaited itself: 6m + 2 × 20s.
	require.Equal(t, 6*time.Minute+40*time.Second, h.env.Now().Sub(h.start))
	require.Equal(t, coord.PhaseDone, h.lastStatus().Phase)
}

// testCoordination is a run of a new session of the given agents.
func testCoordination(ids ...string) *coordination {
	cfg := testConfig(ids...)
	return &coordination{m: coord.NewMachine(cfg.Orchestrator.Rules(), cfg.AgentIDs())}
}

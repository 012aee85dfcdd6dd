package workflows

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// update_mode restart: a new answer abandons the running step of an agent
// that already answered; an agent still working on its first answer is
// protected. The abandoned launch is fenced off first (FenceStep) and the
// agent relaunched with the NEXT step number, so the abandoned step, which
// may still return, can never write the relaunch's folder; whatever it
// returns is ignored. A launch that committed before the fence is let
// finish and recorded.
func TestRestartMode(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	for _, tc := range []struct {
		name       string
		a2         scripted // a's step 2, running when b answers at 5m
		fenceDelay time.Duration
		committed  bool
		want       []string
		end        time.Duration
	}{
		{name: "fenced at once", a2: vote(b, 10*time.Minute, seen),
			want: []string{"agent_a:1", "agent_b:1", "agent_a:2", "agent_b:2", "agent_a:3"}, end: 15 * time.Minute},
		{name: "the fenced step returns while the fence is under way", a2: vote(b, 4*time.Minute+30*time.Second, seen),
			fenceDelay: time.Minute,
			want:       []string{"agent_a:1", "agent_b:1", "agent_a:2", "agent_b:2", "agent_a:3"}, end: 16 * time.Minute},
		{name: "the fenced step returns a vote anyway",
			a2:         scripted{action: coord.ActionVote, target: a, seen: seen, delay: 4*time.Minute + 30*time.Second, ignoresFence: true},
			fenceDelay: time.Minute,
			want:       []string{"agent_a:1", "agent_b:1", "agent_a:2", "agent_b:2", "agent_a:3"}, end: 16 * time.Minute},
		{name: "committed before the fence", a2: vote(b, 10*time.Minute, seen), committed: true,
			want: []string{"agent_a:1", "agent_b:1", "agent_a:2", "agent_b:2"}, end: 11 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, map[stepKey]scripted{
				{a, 1}: answer(time.Minute), {b, 1}: answer(5 * time.Minute),
				{a, 2}: tc.a2, {b, 2}: vote(b, time.Minute, seen), {a, 3}: vote(b, 10*time.Minute, seen),
			})
			h.fenceDelay = tc.fenceDelay
			h.committed[3] = tc.committed // a:2 is launch 3
			cfg := testConfig(a, b)
			cfg.Orchestrator.UpdateMode = config.UpdateRestart
			h.run(input(cfg))

			r := h.result()
			require.Equal(t, coord.StatusConsensus, r.Status)
			require.Equal(t, b, r.Winner)
			require.Equal(t, map[string]int{b: 2}, r.Votes, "nothing of the abandoned launch is recorded")
			ls := h.launched()
			require.Equal(t, tc.want, pairs(ls))
			// b's first answer was not interrupted by a's answer at 1m; a's
			// step 2 (launch 3) was fenced when b answered at 5m.
			require.Equal(t, 1, h.calls[stepKey{b, 1}])
			require.Equal(t, []contract.FenceStepInput{{SessionID: "s1", SessionRef: ls[2].SessionRef,
				Agent: a, Step: 2, Launch: 3, Reason: "restart"}}, h.fences)
			if !tc.committed {
				require.Equal(t, 5*time.Minute+tc.fenceDelay, ls[4].At, "relaunched once the fence answered")
				require.Equal(t, 5, ls[4].Launch)
			}
			require.Equal(t, tc.end, h.env.Now().Sub(h.start))
			// Four steps and the presentation: the abandoned one is not counted.
			require.Equal(t, int64(4*10+100), r.Usage.InputTokens)
			final := h.lastStatus()
			require.Equal(t, len(tc.want)-2, final.Agents[a].LatestStep)
			require.Equal(t, b, final.Agents[a].VoteTarget)
		})
	}
}

// One new answer restarts every peer that is mid-step, not just the first:
// two voters running when the third agent answers are both fenced off and
// relaunched, each with its next step number.
func TestRestartModeRestartsEveryRunningPeer(t *testing.T) {
	seen := map[string]int{a: 1, b: 1, c: 1}
	late := vote(c, 10*time.Minute, seen)
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute), {c, 1}: answer(5 * time.Minute),
		{a, 2}: late, {a, 3}: late, {a, 4}: late, {b, 2}: late, {b, 3}: late, {c, 2}: vote(c, time.Minute, seen),
	})
	cfg := testConfig(a, b, c)
	cfg.Orchestrator.UpdateMode = config.UpdateRestart
	h.run(input(cfg))

	r := h.result()
	require.Equal(t, coord.StatusConsensus, r.Status)
	require.Equal(t, c, r.Winner)
	// a:2 ran from 1m and was fenced by b's answer at 2m; a:3 and b:2 ran
	// from 2m and were fenced by c's answer at 5m.
	require.ElementsMatch(t, []string{"agent_a:1", "agent_b:1", "agent_c:1", "agent_a:2", "agent_a:3", "agent_b:2",
		"agent_a:4", "agent_b:3", "agent_c:2"}, pairs(h.launched()))
	var fenced []string
	for _, f := range h.fences {
		fenced = append(fenced, f.Agent+":"+strconv.Itoa(f.Step))
	}
	require.ElementsMatch(t, []string{"agent_a:2", "agent_a:3", "agent_b:2"}, fenced)
	final := h.lastStatus()
	require.Equal(t, 4, final.Agents[a].LatestStep)
	require.Equal(t, 3, final.Agents[b].LatestStep)
}

// The orchestrator timeout fences every running step before it picks the
// winner: a step fenced off is cancelled and leaves nothing; a step that
// had committed is let finish, and its action counts.
func TestTimeoutFencesRunningSteps(t *testing.T) {
	for _, tc := range []struct {
		name      string
		committed bool
		bStep     int // b's latest step in the final status
		end       time.Duration
	}{
		{"fenced off", false, 1, 10 * time.Minute},
		{"committed", true, 2, 10*time.Minute + 30*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, map[stepKey]scripted{
				{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute),
				{a, 2}: vote(b, 2*time.Minute, map[string]int{a: 1, b: 1}),
				{b, 2}: vote(b, 8*time.Minute+30*time.Second, map[string]int{a: 1, b: 1}), // launch 4, from 2m
			})
			h.committed[4] = tc.committed
			cfg := testConfig(a, b)
			cfg.Orchestrator.OrchestratorTimeoutSeconds = 600
			h.run(input(cfg))

			r := h.result()
			require.Equal(t, coord.StatusTimeout, r.Status)
			require.Equal(t, b, r.Winner)
			require.Len(t, h.fences, 1)
			require.Equal(t, contract.FenceStepInput{SessionID: "s1", SessionRef: h.launched()[3].SessionRef,
				Agent: b, Step: 2, Launch: 4, Reason: "timeout"}, h.fences[0])
			final := h.lastStatus()
			require.Equal(t, coord.PhaseTimeout, final.Phase)
			require.Equal(t, tc.bStep, final.Agents[b].LatestStep)
			require.Equal(t, tc.end, h.env.Now().Sub(h.start))
		})
	}
}

// Cancelling the workflow fences every running step (with a context the
// cancellation does not cancel) before it stops them; a step that had
// committed is let finish and recorded.
func TestCancellationFencesRunningSteps(t *testing.T) {
	for _, tc := range []struct {
		name      string
		committed bool // a's step 2, launch 3
		aStep     int
	}{
		{"fenced off", false, 1},
		{"committed", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, map[stepKey]scripted{
				{a, 1}: answer(time.Minute), {b, 1}: answer(10 * time.Hour), {a, 2}: vote(a, time.Hour, map[string]int{a: 1}),
			})
			h.committed[3] = tc.committed
			h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
			h.run(input(testConfig(a, b)))

			require.True(t, temporal.IsCanceledError(h.env.GetWorkflowError()))
			var got []string
			for _, f := range h.fences {
				require.Equal(t, "cancelled", f.Reason)
				got = append(got, f.Agent)
			}
			require.ElementsMatch(t, []string{a, b}, got)
			final := h.lastStatus()
			require.Equal(t, coord.PhaseCancelled, final.Phase)
			require.Equal(t, tc.aStep, final.Agents[a].LatestStep)
			require.Zero(t, final.Agents[b].LatestStep)
		})
	}
}

// lateFirstStep runs a session whose agent_a's first step is superseded by
// a launch the workflow does not know of (a reset run's folder) at 2m,
// after agent_b answered at 1m: a's first answer comes from step 2.
func lateFirstStep(t *testing.T) *harness {
	superseded := temporal.NewNonRetryableApplicationError("held by launch 9", contract.ErrTypeSuperseded, nil)
	seen := map[string]int{a: 2, b: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: {err: superseded, delay: 2 * time.Minute}, {b, 1}: answer(time.Minute),
		{a, 2}: answer(time.Minute), {b, 2}: vote(b, 10*time.Minute, map[string]int{b: 1}),
		{a, 3}: vote(b, time.Minute, seen), {b, 3}: vote(b, time.Minute, seen),
	})
	h.run(input(testConfig(a, b)))
	return h
}

// A superseded step gives up its number: the agent is relaunched with the
// next one, not failed.
func TestSupersededStepIsRelaunched(t *testing.T) {
	h := lateFirstStep(t)
	r := h.result()
	require.Equal(t, coord.StatusConsensus, r.Status)
	require.Empty(t, r.FailedAgents)
	require.Equal(t, []string{"agent_a:1", "agent_b:1", "agent_b:2", "agent_a:2", "agent_a:3", "agent_b:3"}, pairs(h.launched()))
	require.Empty(t, h.fences)
}

// What a step is shown is fixed when the workflow launches it: an agent
// without an answer of its own sees nothing, however late its step starts
// (a's first answer is launched at 2m, after b answered); an agent that
// answered sees every latest answer as the ledger knows it.
func TestVisibleAnswersAtLaunch(t *testing.T) {
	h := lateFirstStep(t)
	require.Equal(t, coord.StatusConsensus, h.result().Status)
	want := []map[string]int{
		{},           // a:1 at 0
		{},           // b:1 at 0
		{b: 1},       // b:2 at 1m: its own answer
		{},           // a:2 at 2m: b had answered, a had not
		{a: 2, b: 1}, // a:3 at 3m
		{a: 2, b: 1}, // b:3 at 11m (its vote went stale)
	}
	ls := h.launched()
	require.Len(t, ls, len(want))
	for i, l := range ls {
		require.NotNil(t, l.Visible, "launch %d: an empty view is explicit", l.Launch)
		require.Equal(t, want[i], l.Visible, "launch %d (%s:%d)", l.Launch, l.Agent, l.Step)
	}
	require.Equal(t, 2*time.Minute, ls[3].At)
}

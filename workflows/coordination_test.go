package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

const (
	a = "agent_a"
	b = "agent_b"
	c = "agent_c"
)

// Seed 000's session lifecycle, in step mode's barrier rounds.
func TestSeedLifecycleRounds(t *testing.T) {
	h := newHarness(t, map[stepKey]scripted{
		// Round 1: initial answers.
		{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute), {c, 1}: answer(3 * time.Minute),
		// Round 2: a and b vote for b while c answers again.
		{a, 2}: vote(b, time.Minute, nil), {b, 2}: vote(b, time.Minute, nil), {c, 2}: answer(2 * time.Minute),
		// Round 3: everyone votes for c.
		{a, 3}: vote(c, time.Minute, nil), {b, 3}: vote(c, time.Minute, nil), {c, 3}: vote(c, time.Minute, nil),
	})
	h.saAvailable = true
	cfg := testConfig(a, b, c)
	cfg.Orchestrator.Scheduling = config.SchedulingRounds
	h.run(input(cfg))

	r := h.result()
	require.Equal(t, coord.StatusConsensus, r.Status)
	require.Equal(t, c, r.Winner)
	require.Equal(t, "final answer by agent_c", r.FinalAnswer)
	require.Equal(t, "mem://s1", r.Session)
	require.Equal(t, map[string]int{c: 3}, r.Votes)
	require.Equal(t, []string{"final/answer.json"}, r.Keys)
	require.Equal(t, int64(9*10+100), r.Usage.InputTokens)
	require.Equal(t, int64(9*5+50), r.Usage.OutputTokens)
	require.InDelta(t, 9*0.01+0.1, r.Usage.CostUSD, 1e-9)

	ls := h.launched()
	require.Equal(t, []string{"agent_a:1", "agent_b:1", "agent_c:1", "agent_a:2", "agent_b:2", "agent_c:2",
		"agent_a:3", "agent_b:3", "agent_c:3"}, pairs(ls))
	// The barrier: round 2 starts when the slowest round-1 step ends (3m),
	// round 3 when c's second answer arrives (5m).
	for i, l := range ls {
		want := []time.Duration{0, 3 * time.Minute, 5 * time.Minute}[i/3]
		require.Equal(t, want, l.At, "launch %d (%s:%d)", l.Launch, l.Agent, l.Step)
		require.Equal(t, i+1, l.Launch)
	}
	// c has two answers, the per-agent default cap: its round-3 step is vote-only.
	require.Equal(t, coord.ModeVoting, ls[6].Mode)
	require.Equal(t, coord.ModeVoteOnly, ls[8].Mode)

	// After round 2, a's and b's votes are stale (they had not seen c's step
	// 2), which is why they were relaunched; the status is written once the
	// relaunches are under way, so nobody is left waiting for one.
	var after2 *coord.Status
	for i, s := range h.statuses {
		if s.Agents[a].LatestStep == 2 && s.Agents[b].LatestStep == 2 && s.Agents[c].LatestStep == 2 {
			after2 = &h.statuses[i]
			break
		}
	}
	require.NotNil(t, after2)
	require.Equal(t, b, after2.Agents[a].VoteTarget)
	require.True(t, after2.Agents[a].VoteStale)
	require.True(t, after2.Agents[b].VoteStale)
	require.Equal(t, []string{}, after2.Relaunch)
	require.False(t, after2.Consensus)

	// Inputs by reference: the session stores the task and config once;
	// steps and the presentation carry their hash, the owner and location.
	ref := contract.SessionRef{Owner: &h.initIn[0].Owner, Location: "mem://s1"}
	require.NotNil(t, ref.Owner)
	require.Equal(t, input(cfg).Task, h.initIn[0].Task)
	require.Equal(t, ls[0].SessionRef, ref)
	for _, l := range ls {
		require.Equal(t, testInputsHash, l.InputsHash)
	}
	require.Equal(t, []contract.PresentInput{{SessionID: "s1", Presenter: c, SessionRef: ref,
		InputsHash: testInputsHash, Strategy: string(config.FinalWinnerPresent)}}, h.presents)
	// The background status writer keeps only the newest status while a
	// write is in flight, so "presenting" may be superseded by "done" before
	// it is stored; the search attributes below are upserted synchronously
	// and always show it.
	phases := h.phases()
	require.Contains(t, [][]string{
		{coord.PhaseCoordinating, coord.PhasePresenting, coord.PhaseDone},
		{coord.PhaseCoordinating, coord.PhaseDone},
	}, phases)
	final := h.lastStatus()
	require.True(t, final.Consensus)
	require.Equal(t, c, final.Winner)
	require.Equal(t, []string{"phase=coordinating", "phase=presenting", "winner=agent_c", "phase=done"}, h.upserts)
}

// Asynchronous scheduling: agents relaunch as soon as their step ends, and a
// late answer stales the votes cast before it.
func TestAsyncLateAnswerRelaunchesStaleVoters(t *testing.T) {
	seen1 := map[string]int{a: 1, b: 1}
	seen2 := map[string]int{a: 1, b: 1, c: 1}
	h := newHarness(t, map[stepKey]scripted{
		{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute), {c, 1}: answer(10 * time.Minute),
		{a, 2}: vote(a, 2*time.Minute, seen1), {b, 2}: vote(a, 2*time.Minute, seen1),
		{a, 3}: vote(c, time.Minute, seen2), {b, 3}: vote(c, 2*time.Minute, seen2), {c, 2}: vote(c, 3*time.Minute, seen2),
	})
	var mid coord.Status
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(contract.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&mid))
	}, 5*time.Minute)
	h.run(input(testConfig(a, b, c)))

	r := h.result()
	require.Equal(t, coord.StatusConsensus, r.Status)
	require.Equal(t, c, r.Winner)

	ls := h.launched()
	require.Equal(t, []string{"agent_a:1", "agent_b:1", "agent_c:1", "agent_a:2", "agent_b:2",
		"agent_a:3", "agent_b:3", "agent_c:2"}, pairs(ls))
	at := []time.Duration{0, 0, 0, time.Minute, 2 * time.Minute, 10 * time.Minute, 10 * time.Minute, 10 * time.Minute}
	for i, l := range ls {
		require.Equal(t, at[i], l.At, "launch %d (%s:%d)", l.Launch, l.Agent, l.Step)
	}

	// The status query at 5m: a and b hold fresh votes for a, c still works.
	require.Equal(t, coord.PhaseCoordinating, mid.Phase)
	require.Equal(t, coord.StateVoted, mid.Agents[a].State)
	require.False(t, mid.Agents[a].VoteStale)
	require.Equal(t, a, mid.Agents[b].VoteTarget)
	require.Equal(t, coord.StateNoAction, mid.Agents[c].State)
	require.Equal(t, []string{}, mid.Relaunch)
	require.Equal(t, map[string]int{a: 2}, mid.Votes)
	require.False(t, mid.Consensus)
	require.Equal(t, int64(40), mid.Usage.InputTokens)
}

// A majority split is re-voted (vote-only, the anonymous tally shown) up to
// max_revote_rounds; then plurality decides, ties going to config order.
func TestSplitVoteRevote(t *testing.T) {
	selfVotes := func(step int) map[stepKey]scripted {
		return map[stepKey]scripted{
			{a, step}: vote(a, time.Minute, nil), {b, step}: vote(b, time.Minute, nil), {c, step}: vote(c, time.Minute, nil),
		}
	}
	for _, tc := range []struct {
		name        string
		revotes     int
		lastRevote  map[stepKey]scripted
		wantStatus  string
		wantWinner  string
		wantLaunchs int
	}{
		{"still split, then plurality", 1, selfVotes(3), coord.StatusPlurality, a, 9},
		{"two re-votes, then plurality", 2, nil, coord.StatusPlurality, a, 12},
		{"re-vote converges", 1, map[stepKey]scripted{
			{a, 3}: vote(b, time.Minute, nil), {b, 3}: vote(b, time.Minute, nil), {c, 3}: vote(c, time.Minute, nil),
		}, coord.StatusConsensus, b, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := map[stepKey]scripted{{a, 1}: answer(time.Minute), {b, 1}: answer(time.Minute), {c, 1}: answer(time.Minute)}
			for k, v := range selfVotes(2) {
				script[k] = v
			}
			for k, v := range selfVotes(3) {
				script[k] = v
			}
			for k, v := range selfVotes(4) {
				script[k] = v
			}
			for k, v := range tc.lastRevote {
				script[k] = v
			}
			h := newHarness(t, script)
			cfg := testConfig(a, b, c)
			cfg.Orchestrator.Scheduling = config.SchedulingRounds
			cfg.Orchestrator.MaxRevoteRounds = tc.revotes
			h.run(input(cfg))

			r := h.result()
			require.Equal(t, tc.wantStatus, r.Status)
			require.Equal(t, tc.wantWinner, r.Winner)
			st := h.lastStatus() // status.json: plurality is no consensus
			require.Equal(t, tc.wantStatus == coord.StatusConsensus, st.Consensus)
			require.Equal(t, tc.wantStatus, st.DecidedBy)
			require.Equal(t, tc.wantWinner, st.Winner)
			ls := h.launched()
			require.Len(t, ls, tc.wantLaunchs)
			for _, l := range ls[3:6] {
				require.Equal(t, coord.ModeVoting, l.Mode)
				require.Nil(t, l.Tally)
			}
			for _, l := range ls[6:] {
				require.Equal(t, coord.ModeVoteOnly, l.Mode, "%s:%d", l.Agent, l.Step)
				require.Equal(t, map[string]int{"agent1": 1, "agent2": 1, "agent3": 1}, l.Tally)
			}
		})
	}
}

// At max_new_answers_per_agent an agent's next step is vote-only; with
// defer_voting_until_all_answered it waits until its peers have answered.
func TestVoteOnlyAtAnswerLimit(t *testing.T) {
	seen := map[string]int{a: 1, b: 1}
	for _, defer_ := range []bool{false, true} {
		t.Run(map[bool]string{false: "vote at once", true: "defer voting"}[defer_], func(t *testing.T) {
			h := newHarness(t, map[stepKey]scripted{
				{a, 1}: answer(time.Minute), {b, 1}: answer(2 * time.Minute),
				{a, 2}: vote(a, 2*time.Minute, seen), {b, 2}: vote(a, 3*time.Minute, seen),
			})
			cfg := testConfig(a, b)
			cfg.Orchestrator.MaxNewAnswersPerAgent = ptr(1)
			cfg.Orchestrator.DeferVotingUntilAllAnswered = defer_
			h.run(input(cfg))

			r := h.result()
			require.Equal(t, coord.StatusConsensus, r.Status)
			require.Equal(t, a, r.Winner)
			ls := h.launched()
			require.Equal(t, []string{"agent_a:1", "agent_b:1", "agent_a:2", "agent_b:2"}, pairs(ls))
			modes := []coord.Mode{ls[0].Mode, ls[1].Mode, ls[2].Mode, ls[3].Mode}
			require.Equal(t, []coord.Mode{coord.ModeVoting, coord.ModeVoting, coord.ModeVoteOnly, coord.ModeVoteOnly}, modes)
			wantA2 := time.Minute
			if defer_ {
				wantA2 = 2 * time.Minute
			}
			require.Equal(t, wantA2, ls[2].At)
		})
	}
}

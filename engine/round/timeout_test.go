package round

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/agent/agenttest"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/tools"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

// clock is a test clock the model script advances.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).Add(d)
}

func newClock() *clock { c := &clock{}; c.set(0); return c }

// Seed 001's per-round timeouts: the soft timeout injects wrap-up guidance
// once; after the grace only workflow tools run; the third refused call
// ends the step with round_timeout.
func TestRoundTimeoutDeniesWorkAndEndsTheStep(t *testing.T) {
	clk := newClock()
	srv := llmtest.Start(t,
		llmtest.Func(func(llmtest.Request) llmtest.Reply {
			clk.set(61 * time.Second) // past the soft timeout, within the grace
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "w1", Name: "write_file", Arguments: `{"path":"a.md","content":"in time"}`}}}
		}).Once(),
		llmtest.Func(func(llmtest.Request) llmtest.Reply {
			clk.set(91 * time.Second) // past soft + grace
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "w2", Name: "write_file", Arguments: `{"path":"b.md","content":"late"}`}}}
		}).IfLastContains("TIME CHECK").Once(),
		llmtest.Call("list_files", `{}`),
	)
	in := input(t, srv, "agent_a", ansA, ansB)
	in.Workspace = &tools.Workspace{Dir: t.TempDir()}
	in.RoundTimeout, in.RoundTimeoutGrace, in.Now = 60*time.Second, 30*time.Second, clk.Now
	_, err := Run(context.Background(), in)
	var ee *EnforcementError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, []string{ReasonRoundTimeout}, ee.Reasons)
	require.Equal(t, 4, srv.Count(), "one call in time, then %d refused", MaxDeniedAfterTimeout)

	_, err = os.Stat(filepath.Join(in.Workspace.Dir, "a.md"))
	require.NoError(t, err, "a tool call before the hard timeout runs")
	_, err = os.Stat(filepath.Join(in.Workspace.Dir, "b.md"))
	require.True(t, os.IsNotExist(err), "a tool call after it does not")
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	wrapUps := 0
	for _, m := range last.Messages {
		wrapUps += strings.Count(m.Content, "TIME CHECK")
	}
	require.Equal(t, 1, wrapUps, "the guidance is injected once")
	require.Contains(t, last.Last().Content, "only workflow tools (new_answer, vote) are allowed now")
}

// After the hard timeout a workflow call still ends the step; and the
// elapsed time survives a resume: the step's start is in the transcript.
func TestRoundTimeoutSurvivesResume(t *testing.T) {
	clk := newClock()
	srv := llmtest.Start(t,
		llmtest.Call("write_file", `{"path":"a.md","content":"early"}`).Once(),
		llmtest.Fail(500, "worker lost").Once(),
		llmtest.Call("write_file", `{"path":"b.md","content":"after the resume"}`).Once(),
		llmtest.Call("vote", `{"agent_id":"agent2","reason":"time is up"}`),
	)
	in := input(t, srv, "agent_a", ansA, ansB)
	in.Workspace = &tools.Workspace{Dir: t.TempDir()}
	in.RoundTimeout, in.RoundTimeoutGrace, in.Now = 60*time.Second, 30*time.Second, clk.Now
	var last *Transcript
	in.Checkpoint = func(_ context.Context, tr *Transcript) error { last = tr; return nil }
	_, err := Run(context.Background(), in)
	require.Error(t, err)
	require.Equal(t, clk.Now(), last.State.StartedAt.UTC())

	clk.set(5 * time.Minute) // the retry runs later, on another worker
	in.Prior = agenttest.Stored(t, last)
	in.Workspace = &tools.Workspace{Dir: t.TempDir()}
	out, err := Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, coord.ActionVote, out.Action)
	require.Equal(t, 1, out.Transcript.State.Denied)
	_, err = os.Stat(filepath.Join(in.Workspace.Dir, "a.md"))
	require.NoError(t, err, "the write before the timeout is replayed")
	_, err = os.Stat(filepath.Join(in.Workspace.Dir, "b.md"))
	require.True(t, os.IsNotExist(err), "the resumed step is past its hard timeout")

	// A second resume of the finished transcript does not replay the
	// refused write either.
	in.Prior = agenttest.Stored(t, last)
	in.Workspace = &tools.Workspace{Dir: t.TempDir()}
	_, err = Run(context.Background(), in)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(in.Workspace.Dir, "b.md"))
	require.True(t, os.IsNotExist(err), "a refused write is never replayed")
}

// Past the hard timeout a gated agent may still submit its checklist: it
// is how it reaches its vote (seed 001: the hard timeout allows terminal
// progress); workspace tools stay refused.
func TestChecklistStillRunsAfterTheHardTimeout(t *testing.T) {
	clk := newClock()
	srv := llmtest.Start(t,
		llmtest.Func(func(llmtest.Request) llmtest.Reply {
			clk.set(10 * time.Minute) // long past soft + grace
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: tools.SubmitChecklist, Arguments: passB}}}
		}).Once(),
		llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"passes"}`))
	in := gatedInput(t, srv, ansA, ansB)
	in.RoundTimeout, in.RoundTimeoutGrace, in.Now = 60*time.Second, 30*time.Second, clk.Now
	out, err := Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, "agent_b", out.Target)
	second := srv.Requests()[1]
	require.True(t, second.Contains(`"verdict":"vote"`), "the checklist ran")
	require.Contains(t, second.Last().Content, "finish now by calling a workflow tool (new_answer, vote, submit_checklist)")
	require.Contains(t, second.Last().Content, "From now on other tool calls are refused", "no grace is promised once it is over")
	require.Zero(t, out.Transcript.State.Denied)
}

// staticGate refuses every answer with its refusal.
type staticGate string

func (g staticGate) AdmitAnswer(context.Context, map[string]int) (string, error) {
	return string(g), nil
}

// Peers used up the global answer limit while this first step ran: it has
// seen no answer, so it cannot vote, and no attempts are burnt on a step
// with no legal action — the turn ends at once (the workflow relaunches
// the agent to vote). A step that can vote is refused and votes instead.
func TestAnswerLimitOnAStepThatCannotVoteEndsTheTurn(t *testing.T) {
	srv := llmtest.Start(t, llmtest.Call(tools.NewAnswer, `{"content":"my first answer"}`))
	in := input(t, srv, "agent_c")
	in.Gate = staticGate("global answer limit reached (2 of 2)")
	_, err := Run(context.Background(), in)
	var ee *EnforcementError
	require.ErrorAs(t, err, &ee)
	require.True(t, ee.TurnEnded())
	require.Equal(t, []string{ReasonAnswerLimitNoVote}, ee.Reasons)
	require.Equal(t, 1, srv.Count(), "one model call, no retries of a dead end")
	require.Contains(t, err.Error(), "could not vote yet")

	srv = llmtest.Start(t,
		llmtest.Call(tools.NewAnswer, `{"content":"another answer"}`).Once(),
		llmtest.Call(tools.Vote, `{"agent_id":"agent2","reason":"fine"}`))
	in = input(t, srv, "agent_a", ansA, ansB)
	in.Gate = staticGate("global answer limit reached (2 of 2)")
	out, err := Run(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, coord.ActionVote, out.Action)
	require.Contains(t, srv.Requests()[1].Last().Content, "the answer was not recorded: global answer limit reached")
}

package workflows

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// The tests drive the workflow with fake activities registered under the
// real activity names. AgentStep follows a script keyed by (agent, step);
// each entry can take time on the test clock, so tests can arrange which
// step ends first.

type stepKey struct {
	agent string
	step  int
}

// scripted is what one agent does at one step.
type scripted struct {
	action coord.Action
	target string
	// seen overrides seen_steps of a vote or stop; nil means what was stored
	// when the step was launched (step mode's pre-loaded view).
	seen  map[string]int
	delay time.Duration
	err   error
	// ignoresFence: the step returns its result even when its launch was
	// fenced off (as a step of a worker that knows no fences would).
	ignoresFence bool
}

func answer(delay time.Duration) scripted {
	return scripted{action: coord.ActionNewAnswer, delay: delay}
}

func vote(target string, delay time.Duration, seen map[string]int) scripted {
	return scripted{action: coord.ActionVote, target: target, delay: delay, seen: seen}
}

func stop(delay time.Duration, seen map[string]int) scripted {
	return scripted{action: coord.ActionStop, delay: delay, seen: seen}
}

func fail(err error) scripted { return scripted{err: err} }

// launchRec is one AgentStep launch as the fake saw it.
type launchRec struct {
	contract.AgentStepInput
	At   time.Duration // test clock, since the workflow started
	Seen map[string]int
}

type harness struct {
	t     *testing.T
	env   *testsuite.TestWorkflowEnvironment
	start time.Time

	mu          sync.Mutex
	script      map[stepKey]scripted
	stored      map[string]int // latest answer step per agent, as storage would hold it
	launches    map[int]launchRec
	statuses    []coord.Status
	inbox       []contract.WriteInboxInput
	presents    []contract.PresentInput
	calls       map[stepKey]int // AgentStep attempts
	inits       int
	initIn      []contract.InitSessionInput
	saAvailable bool
	presentErr  map[string]error // by strategy
	upserts     []string         // phase/winner values upserted
	evaluator   evaluatorFake    // RoundEvaluator runs
	// The fake FenceStep decides when it starts, as launch.json would:
	// a launch in committed is reported committed, any other is fenced
	// off, and a fenced launch's step then returns StepSuperseded. It
	// answers after fenceDelay.
	fences     []contract.FenceStepInput
	fenced     map[int]bool
	committed  map[int]bool
	fenceDelay time.Duration
}

func quietSuite() *testsuite.WorkflowTestSuite {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	return &s
}

func newHarness(t *testing.T, script map[stepKey]scripted) *harness {
	t.Helper()
	env := quietSuite().NewTestWorkflowEnvironment()
	h := &harness{t: t, env: env, start: env.Now(), script: script,
		stored: map[string]int{}, launches: map[int]launchRec{}, calls: map[stepKey]int{},
		fenced: map[int]bool{}, committed: map[int]bool{}}
	Register(env)
	env.RegisterActivityWithOptions(h.initSession, activity.RegisterOptions{Name: contract.NameInitSession})
	env.RegisterActivityWithOptions(h.searchAttrs, activity.RegisterOptions{Name: contract.NameSearchAttrsSet})
	env.RegisterActivityWithOptions(h.writeStatus, activity.RegisterOptions{Name: contract.NameWriteStatus})
	env.RegisterActivityWithOptions(h.writeInbox, activity.RegisterOptions{Name: contract.NameWriteInbox})
	env.RegisterActivityWithOptions(h.present, activity.RegisterOptions{Name: contract.NamePresent})
	env.RegisterActivityWithOptions(h.agentStep, activity.RegisterOptions{Name: contract.NameAgentStep})
	env.RegisterActivityWithOptions(h.evaluator.run, activity.RegisterOptions{Name: contract.NameRoundEvaluator})
	env.RegisterActivityWithOptions(h.fenceStep, activity.RegisterOptions{Name: contract.NameFenceStep})
	env.OnActivity(contract.NameFenceStep, mock.Anything, mock.Anything).Return(h.fenceStep).AfterFn(func() time.Duration {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.fenceDelay
	})

	// One mock per scripted step, so each can take its own time on the test
	// clock; anything unscripted fails the step loudly.
	for _, k := range slices.SortedFunc(maps.Keys(script), func(a, b stepKey) int {
		if a.agent != b.agent {
			return strings.Compare(a.agent, b.agent)
		}
		return a.step - b.step
	}) {
		m := env.OnActivity(contract.NameAgentStep, mock.Anything, mock.MatchedBy(func(in contract.AgentStepInput) bool {
			return in.Agent == k.agent && in.Step == k.step
		})).Return(h.agentStep)
		if d := script[k].delay; d > 0 {
			m.After(d)
		}
	}
	env.OnActivity(contract.NameAgentStep, mock.Anything, mock.Anything).Return(h.agentStep)

	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name == contract.NameFenceStep {
			var in contract.FenceStepInput
			require.NoError(t, args.Get(&in))
			h.mu.Lock()
			defer h.mu.Unlock()
			h.fences = append(h.fences, in)
			if !h.committed[in.Launch] {
				h.fenced[in.Launch] = true
			}
			return
		}
		if info.ActivityType.Name != contract.NameAgentStep {
			return
		}
		var in contract.AgentStepInput
		require.NoError(t, args.Get(&in))
		h.mu.Lock()
		defer h.mu.Unlock()
		h.launches[in.Launch] = launchRec{AgentStepInput: in, At: env.Now().Sub(h.start), Seen: maps.Clone(h.stored)}
	})
	env.SetOnActivityCompletedListener(func(info *activity.Info, result converter.EncodedValue, err error) {
		if info.ActivityType.Name != contract.NameAgentStep || err != nil || result == nil {
			return
		}
		var res contract.AgentStepResult
		require.NoError(t, result.Get(&res))
		if res.Action == coord.ActionNewAnswer {
			h.mu.Lock()
			h.stored[res.Agent] = res.Step
			h.mu.Unlock()
		}
	})
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		h.mu.Lock()
		defer h.mu.Unlock()
		if v, ok := sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(contract.SearchAttrPhase)); ok {
			h.upserts = append(h.upserts, "phase="+v)
		}
		if v, ok := sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(contract.SearchAttrWinner)); ok {
			h.upserts = append(h.upserts, "winner="+v)
		}
	}).Return(nil).Maybe()
	return h
}

func (h *harness) agentStep(_ context.Context, in contract.AgentStepInput) (contract.AgentStepResult, error) {
	h.mu.Lock()
	s, ok := h.script[stepKey{in.Agent, in.Step}]
	seen := h.launches[in.Launch].Seen
	h.calls[stepKey{in.Agent, in.Step}]++
	fenced := h.fenced[in.Launch] && !s.ignoresFence
	h.mu.Unlock()
	if in.AutoStop != "" { // engine/step stores the stop without a model call
		return contract.AgentStepResult{Agent: in.Agent, Step: in.Step, Action: coord.ActionStop, Summary: in.AutoStop,
			StopStatus: "complete", SeenSteps: seen, Key: "agents/" + in.Agent + "/" + strconv.Itoa(in.Step)}, nil
	}
	if fenced {
		return contract.AgentStepResult{}, temporal.NewNonRetryableApplicationError(
			"launch "+strconv.Itoa(in.Launch)+" was fenced off", contract.ErrTypeSuperseded, nil)
	}
	if !ok {
		return contract.AgentStepResult{}, temporal.NewNonRetryableApplicationError(
			"unscripted step "+in.Agent+" "+strconv.Itoa(in.Step), "EnforcementError", nil)
	}
	if s.err != nil {
		return contract.AgentStepResult{}, s.err
	}
	if s.seen != nil {
		seen = s.seen
	}
	res := contract.AgentStepResult{Agent: in.Agent, Step: in.Step, Action: s.action, SeenSteps: seen,
		Key: "agents/" + in.Agent + "/" + strconv.Itoa(in.Step), Usage: coord.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 0.01}}
	switch s.action {
	case coord.ActionNewAnswer:
		res.AnswerPreview = "answer of " + in.Agent + " at step " + strconv.Itoa(in.Step)
	case coord.ActionVote:
		res.Target, res.Reason = s.target, "best"
	case coord.ActionStop:
		res.Summary, res.StopStatus = "my part is done", "complete"
	}
	return res, nil
}

func (h *harness) fenceStep(_ context.Context, in contract.FenceStepInput) (contract.FenceStepResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return contract.FenceStepResult{Committed: !h.fenced[in.Launch]}, nil
}

func (h *harness) initSession(_ context.Context, in contract.InitSessionInput) (contract.InitSessionResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inits++
	h.initIn = append(h.initIn, in)
	plan, err := contract.PrepareSession(&in)
	if err != nil {
		return contract.InitSessionResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
	}
	return contract.InitSessionResult{Location: "mem://" + in.SessionID, InputsHash: testInputsHash, Plan: plan}, nil
}

func (h *harness) searchAttrs(context.Context) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.saAvailable, nil
}

func (h *harness) writeStatus(_ context.Context, in contract.WriteStatusInput) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.statuses = append(h.statuses, in.Status)
	return nil
}

func (h *harness) writeInbox(_ context.Context, in contract.WriteInboxInput) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inbox = append(h.inbox, in)
	return nil
}

func (h *harness) present(_ context.Context, in contract.PresentInput) (contract.PresentResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.presents = append(h.presents, in)
	if err := h.presentErr[in.Strategy]; err != nil {
		return contract.PresentResult{}, err
	}
	return contract.PresentResult{Presenter: in.Presenter, Answer: "final answer by " + in.Presenter,
		Key: "final/answer.json", Usage: coord.Usage{InputTokens: 100, OutputTokens: 50, CostUSD: 0.1}}, nil
}

// run executes the workflow to its end.
func (h *harness) run(in CoordinationInput) {
	h.t.Helper()
	h.env.ExecuteWorkflow(contract.CoordinationName, in)
	require.True(h.t, h.env.IsWorkflowCompleted(), "workflow did not complete")
}

func (h *harness) result() CoordinationResult {
	h.t.Helper()
	require.NoError(h.t, h.env.GetWorkflowError())
	var r CoordinationResult
	require.NoError(h.t, h.env.GetWorkflowResult(&r))
	return r
}

// launched lists the launches in the workflow's launch order.
func (h *harness) launched() []launchRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]launchRec, 0, len(h.launches))
	for _, n := range slices.Sorted(maps.Keys(h.launches)) {
		out = append(out, h.launches[n])
	}
	return out
}

// pairs renders launches as "agent:step".
func pairs(ls []launchRec) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Agent + ":" + strconv.Itoa(l.Step)
	}
	return out
}

func (h *harness) lastStatus() coord.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	require.NotEmpty(h.t, h.statuses)
	return h.statuses[len(h.statuses)-1]
}

func (h *harness) phases() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.statuses {
		if len(out) == 0 || out[len(out)-1] != s.Phase {
			out = append(out, s.Phase)
		}
	}
	return out
}

// testInputsHash is the fake InitSession's hash of the stored inputs.
const testInputsHash = "sha256:test"

func testConfig(ids ...string) config.Config {
	c := config.Config{Orchestrator: config.DefaultOrchestrator()}
	for _, id := range ids {
		c.Agents = append(c.Agents, config.Agent{ID: id, Backend: config.Backend{Model: "test-model"}})
	}
	return c
}

func input(c config.Config) CoordinationInput {
	return CoordinationInput{Task: "Write a haiku about durable execution.", Config: c, SessionID: "s1"}
}

func ptr[T any](v T) *T { return &v }

// appError unwraps the workflow's error to its ApplicationError.
func appError(t *testing.T, err error) *temporal.ApplicationError {
	t.Helper()
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "want an ApplicationError, got %v", err)
	return app
}

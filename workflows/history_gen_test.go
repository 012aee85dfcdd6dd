//go:build historygen

package workflows

// Records the coordination histories TestReplay replays, by running
// sessions on a real Temporal dev server (./bin/temporal) with scripted
// activities:
//
//	go test -tags historygen -run 'TestGenerate' ./workflows/
//
// A change to workflow logic re-records them in the same commit: sessions
// are pinned to the worker build that started them, so no running session
// replays another build's code.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/internal/testenv"
)

// liveFakes are activities for a real worker: each step follows a script
// keyed by (agent, step), after its delay; a vote or stop has seen every
// answer stored when it returns. Fenced launches fail as superseded.
type liveFakes struct {
	mu     sync.Mutex
	script map[stepKey]scripted
	stored map[string]int
	fenced map[int]bool
}

func (f *liveFakes) agentStep(ctx context.Context, in contract.AgentStepInput) (contract.AgentStepResult, error) {
	f.mu.Lock()
	s, ok := f.script[stepKey{in.Agent, in.Step}]
	f.mu.Unlock()
	if !ok {
		return contract.AgentStepResult{}, temporal.NewNonRetryableApplicationError("unscripted step "+in.Agent+" "+strconv.Itoa(in.Step), "EnforcementError", nil)
	}
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fenced[in.Launch] {
		return contract.AgentStepResult{}, temporal.NewNonRetryableApplicationError("fenced off", contract.ErrTypeSuperseded, nil)
	}
	res := contract.AgentStepResult{Agent: in.Agent, Step: in.Step, Action: s.action, SeenSteps: maps.Clone(f.stored),
		Key: "agents/" + in.Agent + "/" + strconv.Itoa(in.Step), Usage: coord.Usage{InputTokens: 10, OutputTokens: 5}}
	switch s.action {
	case coord.ActionNewAnswer:
		f.stored[in.Agent] = in.Step
		res.Label, res.AnswerPreview = "agentX.1", "an answer"
	case coord.ActionVote:
		res.Target, res.Reason = s.target, "best"
	case coord.ActionStop:
		res.Summary, res.StopStatus = "my part is done", "complete"
	}
	return res, nil
}

func (f *liveFakes) fenceStep(_ context.Context, in contract.FenceStepInput) (contract.FenceStepResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fenced[in.Launch] = true
	return contract.FenceStepResult{}, nil
}

// historyServer starts a dev server for a generator and dials it.
func historyServer(t *testing.T) (bin, addr string, cl client.Client) {
	bin = testenv.FindBinary(t, "Temporal CLI", "CONCLAVE_TEMPORAL_BIN", "temporal")
	port := testenv.FreePort(t)
	addr = "127.0.0.1:" + strconv.Itoa(port)
	testenv.StartProcess(t, "temporal", exec.Command(bin, "server", "start-dev", "--headless",
		"--ip", "127.0.0.1", "--port", strconv.Itoa(port), "--log-level", "error",
		"--search-attribute", contract.SearchAttrPhase+"=Keyword", "--search-attribute", contract.SearchAttrWinner+"=Keyword"))
	var err error
	for i := 0; i < 100; i++ {
		if cl, err = client.Dial(client.Options{HostPort: addr}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return bin, addr, cl
}

// writeHistory stores a workflow's history as testdata/<name>.
func writeHistory(t *testing.T, bin, addr, workflowID, name string) {
	out, err := exec.Command(bin, "workflow", "show", "--address", addr, "--workflow-id", workflowID,
		"--output", "json").Output()
	require.NoError(t, err)
	path := filepath.Join("testdata", name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, out, 0o644))
	fmt.Println("wrote", path)
}

// recordSession runs one session with the script on a fresh worker and
// records its history as testdata/<name>; human, when set, is sent as
// human input once the session runs.
func recordSession(t *testing.T, name string, cfg config.Config, script map[stepKey]scripted, human string) CoordinationResult {
	bin, addr, cl := historyServer(t)
	queue := "conclave-history-" + name
	w := worker.New(cl, queue, worker.Options{})
	Register(w)
	f := &liveFakes{script: script, stored: map[string]int{}, fenced: map[int]bool{}}
	w.RegisterActivityWithOptions(f.agentStep, activity.RegisterOptions{Name: contract.NameAgentStep})
	w.RegisterActivityWithOptions(f.fenceStep, activity.RegisterOptions{Name: contract.NameFenceStep})
	w.RegisterActivityWithOptions(func(_ context.Context, in contract.InitSessionInput) (contract.InitSessionResult, error) {
		plan, err := contract.PrepareSession(&in)
		if err != nil {
			return contract.InitSessionResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
		}
		return contract.InitSessionResult{Location: "mem://" + in.SessionID, InputsHash: "sha256:history", Plan: plan}, nil
	}, activity.RegisterOptions{Name: contract.NameInitSession})
	w.RegisterActivityWithOptions(func(context.Context) (bool, error) { return true, nil },
		activity.RegisterOptions{Name: contract.NameSearchAttrsSet})
	w.RegisterActivityWithOptions(func(context.Context, contract.WriteStatusInput) error { return nil },
		activity.RegisterOptions{Name: contract.NameWriteStatus})
	w.RegisterActivityWithOptions(func(context.Context, contract.WriteInboxInput) error { return nil },
		activity.RegisterOptions{Name: contract.NameWriteInbox})
	w.RegisterActivityWithOptions(func(_ context.Context, in contract.RoundEvaluatorInput) (contract.RoundEvaluatorResult, error) {
		return contract.RoundEvaluatorResult{Round: in.Round, Usage: coord.Usage{InputTokens: 7}}, nil
	}, activity.RegisterOptions{Name: contract.NameRoundEvaluator})
	w.RegisterActivityWithOptions(func(_ context.Context, in contract.PresentInput) (contract.PresentResult, error) {
		return contract.PresentResult{Presenter: in.Presenter, Answer: "final", Key: "final/answer.json"}, nil
	}, activity.RegisterOptions{Name: contract.NamePresent})
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "history-" + name, TaskQueue: queue},
		contract.CoordinationName, input(cfg))
	require.NoError(t, err)
	if human != "" {
		h, err := cl.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), RunID: run.GetRunID(),
			UpdateName: contract.UpdateHumanInput, Args: []any{HumanInput{Text: human}}, WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(t, err)
		var seq int
		require.NoError(t, h.Get(ctx, &seq))
	}
	var r CoordinationResult
	require.NoError(t, run.Get(ctx, &r))
	writeHistory(t, bin, addr, run.GetID(), "coordination_"+name+"_history.json")
	return r
}

const ms = time.Millisecond

// Voting with human input and a re-vote: three agents answer, split their
// votes, and agree on agent_b in the re-vote.
func TestGenerateVotingHistory(t *testing.T) {
	r := recordSession(t, "voting", testConfig(a, b, c), map[stepKey]scripted{
		{a, 1}: answer(100 * ms), {b, 1}: answer(200 * ms), {c, 1}: answer(300 * ms),
		{a, 2}: vote(a, 900*ms, nil), {b, 2}: vote(b, 800*ms, nil), {c, 2}: vote(c, 700*ms, nil),
		{a, 3}: vote(b, 100*ms, nil), {b, 3}: vote(b, 200*ms, nil), {c, 3}: vote(b, 300*ms, nil),
	}, "Keep it short.")
	require.Equal(t, coord.StatusConsensus, r.Status)
	require.Equal(t, b, r.Winner)
}

// Decomposition with update_mode restart: b's answer fences a's running
// step, which is relaunched with the next step number; both then stop.
func TestGenerateDecompositionHistory(t *testing.T) {
	cfg := testConfig(a, b)
	cfg.Orchestrator.CoordinationMode = config.ModeDecomposition
	cfg.Orchestrator.UpdateMode = config.UpdateRestart
	r := recordSession(t, "decomposition", cfg, map[stepKey]scripted{
		{a, 1}: answer(100 * ms), {b, 1}: answer(600 * ms),
		{a, 2}: stop(3*time.Second, nil), {a, 3}: stop(300*ms, nil),
		{b, 2}: stop(600*ms, nil),
	}, "")
	require.Equal(t, coord.StatusConsensus, r.Status)
}

// Quality gates with the managed round evaluator before round 2.
func TestGenerateQualityGatesHistory(t *testing.T) {
	cfg := testConfig(a, b)
	cfg.Orchestrator.VotingSensitivity = config.SensitivityChecklistGated
	cfg.Orchestrator.RoundEvaluatorBeforeChecklist = true
	cfg.Orchestrator.OrchestratorManagedRoundEvaluator = true
	r := recordSession(t, "quality_gates", cfg, map[stepKey]scripted{
		{a, 1}: answer(100 * ms), {b, 1}: answer(300 * ms),
		{a, 2}: vote(b, 200*ms, nil), {b, 2}: vote(b, 200*ms, nil),
	}, "")
	require.Equal(t, b, r.Winner)
}

// MassGen's quick synthesize path: one answer each, no vote round, the
// presenter synthesizes.
func TestGenerateQuickSynthesizeHistory(t *testing.T) {
	cfg := testConfig(a, b)
	one := 1
	cfg.Orchestrator.MaxNewAnswersPerAgent = &one
	cfg.Orchestrator.FinalAnswerStrategy = config.FinalSynthesize
	r := recordSession(t, "quick_synthesize", cfg, map[stepKey]scripted{
		{a, 1}: answer(100 * ms), {b, 1}: answer(200 * ms),
	}, "")
	require.Empty(t, r.Votes)
}

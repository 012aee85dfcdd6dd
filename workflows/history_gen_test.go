//go:build historygen

package workflows

// Records testdata/coordination_owned_history.json (the session since owned
// sessions and inputs by reference; coordination_status_writer_history.json
// is the same session recorded before them, coordination_history.json
// before the background status writer) by running a session on a real
// Temporal dev server (./bin/temporal) with fake activities:
//
//	go test -tags historygen -run TestGenerateHistory ./workflows/
//
// Regenerate it only when a workflow change is meant to break replay; then
// the change needs workflow.GetVersion instead.

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
	"go.temporal.io/sdk/worker"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/internal/testenv"
)

// liveFakes are activities for a real worker: step 1 answers, later steps
// vote for agent_b having seen every stored answer.
type liveFakes struct {
	mu     sync.Mutex
	stored map[string]int
}

func (f *liveFakes) agentStep(ctx context.Context, in contract.AgentStepInput) (contract.AgentStepResult, error) {
	time.Sleep(time.Duration(len(in.Agent)+in.Step*37%5) * 20 * time.Millisecond)
	f.mu.Lock()
	defer f.mu.Unlock()
	res := contract.AgentStepResult{Agent: in.Agent, Step: in.Step, Key: "agents/" + in.Agent + "/" + strconv.Itoa(in.Step),
		Usage: coord.Usage{InputTokens: 10, OutputTokens: 5}}
	if in.Step == 1 {
		f.stored[in.Agent] = 1
		res.Action, res.Label, res.AnswerPreview = coord.ActionNewAnswer, "agentX.1", "an answer"
		return res, nil
	}
	res.Action, res.Target, res.Reason, res.SeenSteps = coord.ActionVote, "agent_b", "best", maps.Clone(f.stored)
	return res, nil
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

func TestGenerateHistory(t *testing.T) {
	bin, addr, cl := historyServer(t)

	const queue = "conclave-history"
	w := worker.New(cl, queue, worker.Options{})
	Register(w)
	f := &liveFakes{stored: map[string]int{}}
	w.RegisterActivityWithOptions(f.agentStep, activity.RegisterOptions{Name: contract.NameAgentStep})
	w.RegisterActivityWithOptions(func(_ context.Context, in contract.InitSessionInput) (contract.InitSessionResult, error) {
		res := contract.InitSessionResult{Location: "mem://" + in.SessionID}
		if in.Owner != nil {
			res.InputsHash = "sha256:history"
		}
		return res, nil
	}, activity.RegisterOptions{Name: contract.NameInitSession})
	w.RegisterActivityWithOptions(func(context.Context) (bool, error) { return true, nil },
		activity.RegisterOptions{Name: contract.NameSearchAttrsSet})
	w.RegisterActivityWithOptions(func(context.Context, contract.WriteStatusInput) error { return nil },
		activity.RegisterOptions{Name: contract.NameWriteStatus})
	w.RegisterActivityWithOptions(func(context.Context, contract.WriteInboxInput) error { return nil },
		activity.RegisterOptions{Name: contract.NameWriteInbox})
	w.RegisterActivityWithOptions(func(_ context.Context, in contract.PresentInput) (contract.PresentResult, error) {
		return contract.PresentResult{Presenter: in.Presenter, Answer: "final", Key: "final/answer.json"}, nil
	}, activity.RegisterOptions{Name: contract.NamePresent})
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "history-1", TaskQueue: queue},
		contract.CoordinationName, input(testConfig(a, b, c)))
	require.NoError(t, err)
	h, err := cl.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), RunID: run.GetRunID(),
		UpdateName: contract.UpdateHumanInput, Args: []any{HumanInput{Text: "Keep it short."}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	var seq int
	require.NoError(t, h.Get(ctx, &seq))
	require.Equal(t, 1, seq)
	var r CoordinationResult
	require.NoError(t, run.Get(ctx, &r))
	require.Equal(t, coord.StatusConsensus, r.Status)
	require.Equal(t, b, r.Winner)

	writeHistory(t, bin, addr, run.GetID(), "coordination_owned_history.json")
}

// TestGenerateQuickSynthesizeHistory records
// testdata/coordination_quick_synthesize_history.json: a session with the
// quick synthesize settings (max_new_answers_per_agent 1, synthesize) as
// it ran before sessions without a vote round (noVoteRoundChange): the
// agents answered once, then voted. Record it on a build from before that
// change; it replays on the old path.
func TestGenerateQuickSynthesizeHistory(t *testing.T) {
	bin, addr, cl := historyServer(t)

	const queue = "conclave-history-quick"
	w := worker.New(cl, queue, worker.Options{})
	Register(w)
	f := &liveFakes{stored: map[string]int{}}
	w.RegisterActivityWithOptions(f.agentStep, activity.RegisterOptions{Name: contract.NameAgentStep})
	w.RegisterActivityWithOptions(func(_ context.Context, in contract.InitSessionInput) (contract.InitSessionResult, error) {
		return contract.InitSessionResult{Location: "mem://" + in.SessionID, InputsHash: "sha256:history"}, nil
	}, activity.RegisterOptions{Name: contract.NameInitSession})
	w.RegisterActivityWithOptions(func(context.Context) (bool, error) { return true, nil },
		activity.RegisterOptions{Name: contract.NameSearchAttrsSet})
	w.RegisterActivityWithOptions(func(context.Context, contract.WriteStatusInput) error { return nil },
		activity.RegisterOptions{Name: contract.NameWriteStatus})
	w.RegisterActivityWithOptions(func(_ context.Context, in contract.PresentInput) (contract.PresentResult, error) {
		return contract.PresentResult{Presenter: in.Presenter, Answer: "final", Key: "final/answer.json"}, nil
	}, activity.RegisterOptions{Name: contract.NamePresent})
	require.NoError(t, w.Start())
	defer w.Stop()

	cfg := testConfig(a, b)
	one := 1
	cfg.Orchestrator.DisableInjection, cfg.Orchestrator.MaxNewAnswersPerAgent = true, &one
	cfg.Orchestrator.FinalAnswerStrategy = "synthesize"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "history-quick-1", TaskQueue: queue},
		contract.CoordinationName, input(cfg))
	require.NoError(t, err)
	var r CoordinationResult
	require.NoError(t, run.Get(ctx, &r))
	require.Equal(t, b, r.Winner)
	require.Equal(t, map[string]int{b: 2}, r.Votes, "recorded before sessions without a vote round")

	writeHistory(t, bin, addr, run.GetID(), "coordination_quick_synthesize_history.json")
}

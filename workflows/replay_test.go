package workflows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplay replays histories recorded on a real Temporal server from
// the current code (history_gen_test.go, pipeline_history_gen_test.go):
// voting with human input and a re-vote; decomposition with update_mode
// restart and a fenced step; quality gates with the managed round
// evaluator; the quick synthesize path without a vote round; a pipeline
// with a call, a failure it continues past and a coordination step. A
// change to workflow logic fails here and re-records them in the same
// commit (sessions are pinned to their worker build).
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*_history.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 5)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			h, err := client.HistoryFromJSON(strings.NewReader(string(data)), client.HistoryJSONOptions{})
			require.NoError(t, err)
			r := worker.NewWorkflowReplayer()
			Register(r)
			// The recorded workflow id: the pipeline names its child
			// sessions after it.
			id := "history-" + strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "coordination_"), "_history.json")
			if strings.HasPrefix(filepath.Base(f), "pipeline") {
				id = "pipeline-history-1"
			}
			require.NoError(t, r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: id, RunID: "replay"}}))
		})
	}
}

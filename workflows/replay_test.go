package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// TestReplay replays histories recorded on a real Temporal server: a
// session made with fake activities (history_gen_test.go) before and after
// the background status writer (workflow.GetVersion "async-status-writes")
// and since owned sessions with inputs by reference (workflow.GetVersion
// "owned-session-inputs-by-reference"), a session with the quick
// synthesize settings recorded when they still voted (workflow.GetVersion
// "no-vote-round"), a real `make
// demo` session (real activities, offline model) and a pipeline run with a
// call, a failure it continues past and evidence (pipeline_history_gen_test.go), and a quality-gated
// `conclave demo --config examples/checklist.yaml` session with the managed round evaluator
// (workflow.GetVersion "managed-round-evaluator"). A workflow change that would
// break running sessions fails here, and needs workflow.GetVersion.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*_history.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 6)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			Register(r)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}

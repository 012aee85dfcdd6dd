package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// TestReplay replays a history recorded on a real Temporal server (see
// history_gen_test.go): a change to the workflow that would break running
// sessions fails here, and needs workflow.GetVersion.
func TestReplay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	Register(r)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "coordination_history.json")))
}

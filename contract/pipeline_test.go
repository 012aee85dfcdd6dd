package contract

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// result.json and output.json name a step's evidence evidencePaths (seed
// 004); those written before, with "evidence", still read.
func TestPipelineEvidencePaths(t *testing.T) {
	for _, doc := range []string{`{"seq":1,"evidencePaths":["steps/001-a/workspace/x"]}`, `{"seq":1,"evidence":["steps/001-a/workspace/x"]}`} {
		var e PipelineStepEntry
		require.NoError(t, json.Unmarshal([]byte(doc), &e))
		require.Equal(t, []string{"steps/001-a/workspace/x"}, e.Evidence, doc)
		var r PipelineStepResult
		require.NoError(t, json.Unmarshal([]byte(doc), &r))
		require.Equal(t, []string{"steps/001-a/workspace/x"}, r.Evidence, doc)
		require.Equal(t, 1, r.Seq)
	}
	data, err := json.Marshal(PipelineResult{Steps: []PipelineStepEntry{{Evidence: []string{"p"}}}})
	require.NoError(t, err)
	require.Contains(t, string(data), `"evidencePaths":["p"]`)
	require.NotContains(t, string(data), `"evidence":`)
}

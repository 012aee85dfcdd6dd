package coord

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnonymousIDs(t *testing.T) {
	ids := []string{"zeta", "alpha", "mid", "alpha"}
	assert.Equal(t, map[string]string{"alpha": "agent1", "mid": "agent2", "zeta": "agent3"}, AnonymousIDs(ids))
	assert.Equal(t, map[string]string{"agent1": "alpha", "agent2": "mid", "agent3": "zeta"}, RealIDs(ids))
	assert.Equal(t, []string{"zeta", "alpha", "mid", "alpha"}, ids, "input must not be reordered")

	// Configuration order does not matter, only the set of ids.
	assert.Equal(t, AnonymousIDs([]string{"mid", "zeta", "alpha"}), AnonymousIDs(ids))
	assert.Empty(t, AnonymousIDs(nil))

	for real, anon := range AnonymousIDs(ids) {
		assert.Equal(t, real, RealIDs(ids)[anon])
	}
}

func TestLabels(t *testing.T) {
	assert.Equal(t, "agent2.3", Label("agent2", 3))
	assert.Equal(t, "agent1.1", Label("agent1", 1))
	assert.Equal(t, "agent2.final", FinalLabel("agent2"))
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in     string
		agents int
		want   string
	}{
		{"agent2", 3, "agent2"},
		{"agent2.3", 3, "agent2"},
		{"agent3.1", 3, "agent3"},
		{" Agent2 ", 3, "agent2"},
		{"AGENT1.2", 3, "agent1"},
		{"agent12.4", 12, "agent12"},
		{"agent4", 3, ""},
		{"agent0", 3, ""},
		{"agent02", 3, ""},
		{"agent", 3, ""},
		{"agent-1", 3, ""},
		{"agent+1", 3, ""},
		{"agent2.0", 3, ""},
		{"agent2.", 3, ""},
		{"agent2.01", 3, ""},
		{"agent2.x", 3, ""},
		{"agent2.final", 3, ""},
		{"agent2.1.1", 3, ""},
		{"agent_b", 3, ""},
		{"", 3, ""},
		{"agent1", 0, ""},
		{"agent99999999999999999999", 3, ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTarget(tc.in, tc.agents)
			if tc.want == "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "unknown")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := ParseTarget("agent9", 3)
	assert.ErrorContains(t, err, "agent1 to agent3")
}

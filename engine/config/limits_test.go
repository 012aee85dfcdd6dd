package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/coord"
)

func TestVerdictOptions(t *testing.T) {
	o := DefaultOrchestrator()
	require.Equal(t, coord.VerdictOptions{Rule: coord.RuleMajority, MaxRevoteRounds: 2}, o.VerdictOptions())
	o.Consensus, o.CoordinationMode, o.Presenter, o.MaxRevoteRounds = ConsensusPlurality, ModeDecomposition, "agent_b", 0
	require.Equal(t, coord.VerdictOptions{Rule: coord.RulePlurality, Decomposition: true, Presenter: "agent_b"}, o.VerdictOptions())
}

package workflows

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCarriedStateJSON pins the JSON a run hands to its continuation: the
// machine's state and rules, and the run chain's own fields, round-trip
// as they are.
func TestCarriedStateJSON(t *testing.T) {
	const carried = `{"machine":{"ledger":{"agents":[{"id":"agent_a","latest_step":2,"latest_answer_step":1,"answer_count":1,"last_action":"new_answer"}]},
		"answer_order":["agent_a"],"usage":{"input_tokens":10,"output_tokens":5,"cost_usd":0.5},"revote_round":1,
		"revote":["agent_a"],"revote_tally":{"agent1":1},"launches":3,"inbox_seq":2,"phase":"coordinating","last_error":"boom"},
		"rules":{"verdict":{"rule":"majority","max_revote_rounds":2},"limits":{},"strategy":"winner_present","fallback":"winner_reuse"},
		"session_id":"s1","started_at":"2026-03-20T22:32:03Z","deadline":"2026-03-20T23:02:03Z","session":"mem://s1",
		"search_attributes":true,"inputs_hash":"sha256:x","runs":1}`
	var s CarriedState
	require.NoError(t, json.Unmarshal([]byte(carried), &s))
	require.Equal(t, "agent_a", s.Machine.Ledger.Agents[0].ID)
	require.Equal(t, 3, s.Machine.Launches)
	require.Equal(t, time.Date(2026, 3, 20, 23, 2, 3, 0, time.UTC), s.Deadline)
	got, err := json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, carried, string(got))
}

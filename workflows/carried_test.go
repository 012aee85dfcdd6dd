package workflows

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCarriedStateJSON pins the JSON a run hands to its continuation: a
// continued run of an older worker build must still decode it.
func TestCarriedStateJSON(t *testing.T) {
	const old = `{"ledger":{"agents":[{"id":"agent_a","latest_step":2,"latest_answer_step":1,"answer_count":1,"last_action":"new_answer"}]},
		"answer_order":["agent_a"],"usage":{"input_tokens":10,"output_tokens":5,"cost_usd":0.5},"revote_round":1,
		"revote":["agent_a"],"revote_tally":{"agent1":1},"launches":3,"inbox_seq":2,
		"started_at":"2026-03-20T22:32:03Z","deadline":"2026-03-20T23:02:03Z","session":"mem://s1",
		"search_attributes":true,"runs":1,"last_error":"boom"}`
	var s CarriedState
	require.NoError(t, json.Unmarshal([]byte(old), &s))
	require.Equal(t, "agent_a", s.Ledger.Agents[0].ID)
	require.Equal(t, 3, s.Launches)
	require.Equal(t, time.Date(2026, 3, 20, 23, 2, 3, 0, time.UTC), s.Deadline)
	got, err := json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, old, string(got))

	w := newCoordination(CoordinationInput{State: &s})
	require.Equal(t, s, w.state, "a continued run starts from the carried value as is")
}

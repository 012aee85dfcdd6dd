package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/coord"
)

// parseCase is one argument string and what parsing must make of it: either
// the values, or an error containing wantErr.
type parseCase struct {
	name    string
	args    string
	want    []string
	wantErr string
}

func TestParseNewAnswer(t *testing.T) {
	big := strings.Repeat("a", MaxAnswerBytes)
	cases := []parseCase{
		{"good", `{"content": "The answer is 42."}`, []string{"The answer is 42."}, ""},
		{"kept verbatim", `{"content": "  line1\nline2 ✓ "}`, []string{"  line1\nline2 ✓ "}, ""},
		{"exactly the limit", `{"content": "` + big + `"}`, []string{big}, ""},
		{"trailing white space", "{\"content\": \"x\"}\n  ", []string{"x"}, ""},
		{"bad JSON", `{"content": "x`, nil, "not valid JSON"},
		{"bad JSON inside", `{"content" "x"}`, nil, "not valid JSON"},
		{"unknown field", `{"content": "x", "extra": 1}`, nil, `unknown field "extra"`},
		{"field name case", `{"Content": "x"}`, nil, `unknown field "Content"`},
		{"duplicate field", `{"content": "x", "content": "y"}`, nil, `"content" appears more than once`},
		{"missing field", `{}`, nil, `required field "content" is missing`},
		{"empty arguments", ``, nil, `required field "content" is missing`},
		{"null content", `{"content": null}`, nil, `required field "content" is missing`},
		{"empty content", `{"content": ""}`, nil, `field "content" is empty`},
		{"blank content", `{"content": " \n\t"}`, nil, `field "content" is empty`},
		{"number", `{"content": 42}`, nil, `must be a JSON string, not a number`},
		{"array", `{"content": ["x"]}`, nil, `must be a JSON string, not an array`},
		{"object", `{"content": {"text": "x"}}`, nil, `must be a JSON string, not an object`},
		{"boolean", `{"content": true}`, nil, `must be a JSON string, not a boolean`},
		{"oversize", `{"content": "` + big + `b"}`, nil, `over the 1048576-byte limit`},
		{"not an object", `["x"]`, nil, "must be a JSON object, not an array"},
		{"a string", `"x"`, nil, "must be a JSON object, not a string"},
		{"null", `null`, nil, "must be a JSON object, not null"},
		{"trailing garbage", `{"content": "x"} and more`, nil, "extra text after the JSON object"},
		{"second object", `{"content": "x"}{}`, nil, "extra text after the JSON object"},
		{"extra brace", `{"content": "x"}}`, nil, "extra text after the JSON object"},
		{"huge arguments", `{"content": "` + strings.Repeat("x", maxArgsBytes) + `"}`, nil, "arguments are"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			content, err := ParseNewAnswer(c.args)
			check(t, c, err, content)
			if err != nil {
				assert.Contains(t, err.Error(), `call new_answer again with arguments {"content": "<string>"}`)
			}
		})
	}
}

func TestParseVote(t *testing.T) {
	cases := []parseCase{
		{"good", `{"agent_id": "agent2", "reason": "Most complete."}`, []string{"agent2", "Most complete."}, ""},
		{"order does not matter", `{"reason": "r", "agent_id": "agent1"}`, []string{"agent1", "r"}, ""},
		{"label passes through", `{"agent_id": "agent2.3", "reason": "r"}`, []string{"agent2.3", "r"}, ""},
		{"bad JSON", `{agent_id: "agent2"}`, nil, "not valid JSON"},
		{"unknown field", `{"agent_id": "agent2", "reason": "r", "confidence": 0.9}`, nil, `unknown field "confidence"`},
		{"missing reason", `{"agent_id": "agent2"}`, nil, `required field "reason" is missing`},
		{"missing agent_id", `{"reason": "r"}`, nil, `required field "agent_id" is missing`},
		{"empty agent_id", `{"agent_id": "", "reason": "r"}`, nil, `field "agent_id" is empty`},
		{"empty reason", `{"agent_id": "agent1", "reason": " "}`, nil, `field "reason" is empty`},
		{"numeric agent_id", `{"agent_id": 2, "reason": "r"}`, nil, `field "agent_id" must be a JSON string, not a number`},
		{"oversize reason", `{"agent_id": "agent1", "reason": "` + strings.Repeat("r", MaxReasonBytes+1) + `"}`, nil, `field "reason" is 16385 bytes, over the 16384-byte limit`},
		{"oversize agent_id", `{"agent_id": "` + strings.Repeat("a", 65) + `", "reason": "r"}`, nil, `field "agent_id" is 65 bytes`},
		{"trailing garbage", `{"agent_id": "agent1", "reason": "r"},`, nil, "extra text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, reason, err := ParseVote(c.args)
			check(t, c, err, id, reason)
			if err != nil {
				assert.Contains(t, err.Error(), `call vote again with arguments {"agent_id": "<string>", "reason": "<string>"}`)
			}
		})
	}
}

func TestParseStop(t *testing.T) {
	cases := []parseCase{
		{"complete", `{"summary": "Wrote the parser.", "status": "complete"}`, []string{"Wrote the parser.", "complete"}, ""},
		{"blocked", `{"summary": "Need API key.", "status": "blocked"}`, []string{"Need API key.", "blocked"}, ""},
		{"unknown status", `{"summary": "s", "status": "done"}`, nil, `"status" is "done" but must be "complete" or "blocked"`},
		{"status case", `{"summary": "s", "status": "Complete"}`, nil, `must be "complete" or "blocked"`},
		{"bad JSON", `{"summary": "s", "status": "complete"`, nil, "not valid JSON"},
		{"unknown field", `{"summary": "s", "status": "complete", "next": "x"}`, nil, `unknown field "next"`},
		{"missing status", `{"summary": "s"}`, nil, `required field "status" is missing`},
		{"missing summary", `{"status": "blocked"}`, nil, `required field "summary" is missing`},
		{"empty summary", `{"summary": "", "status": "complete"}`, nil, `field "summary" is empty`},
		{"empty status", `{"summary": "s", "status": ""}`, nil, `field "status" is empty`},
		{"boolean status", `{"summary": "s", "status": true}`, nil, `field "status" must be a JSON string, not a boolean`},
		{"oversize summary", `{"summary": "` + strings.Repeat("s", MaxSummaryBytes+1) + `", "status": "complete"}`, nil, "over the 16384-byte limit"},
		{"trailing garbage", `{"summary": "s", "status": "complete"} x`, nil, "extra text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			summary, status, err := ParseStop(c.args)
			check(t, c, err, summary, status)
			if err != nil {
				assert.Contains(t, err.Error(), "call stop again with arguments")
			}
		})
	}
}

// check asserts the outcome of one parse case.
func check(t *testing.T, c parseCase, err error, got ...string) {
	t.Helper()
	if c.wantErr != "" {
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.wantErr)
		for _, g := range got {
			assert.Empty(t, g, "no values on error")
		}
		return
	}
	require.NoError(t, err)
	assert.Equal(t, c.want, got)
}

func TestVoteSpec(t *testing.T) {
	spec := VoteSpec([]string{"agent1", "agent2", "agent1"})
	assert.Equal(t, Vote, spec.Name)
	props := spec.Parameters["properties"].(map[string]any)
	id := props["agent_id"].(map[string]any)
	assert.Equal(t, []string{"agent1", "agent2"}, id["enum"], "caller's order, duplicates dropped")
	assert.Equal(t, "string", id["type"])
	assert.Contains(t, props, "reason")
	assert.Equal(t, []string{"agent_id", "reason"}, spec.Parameters["required"])
	assert.Equal(t, false, spec.Parameters["additionalProperties"])

	none := VoteSpec(nil).Parameters["properties"].(map[string]any)["agent_id"].(map[string]any)
	assert.NotContains(t, none, "enum", "an empty enum is invalid JSON schema")

	// Every spec must survive the round engine's marshalling.
	for _, s := range []Spec{spec, NewAnswerSpec(), StopSpec()} {
		_, err := json.Marshal(s.Parameters)
		require.NoError(t, err, s.Name)
	}
	status := StopSpec().Parameters["properties"].(map[string]any)["status"].(map[string]any)
	assert.Equal(t, []string{StopComplete, StopBlocked}, status["enum"])
}

func TestWorkflowSpecs(t *testing.T) {
	two := []string{"agent1", "agent2"}
	cases := []struct {
		mode       coord.Mode
		candidates []string
		want       []string
	}{
		{coord.ModeVoting, two, []string{NewAnswer, Vote}},
		{coord.ModeVoting, nil, []string{NewAnswer}},
		{coord.ModeVoteOnly, two, []string{Vote}},
		{coord.ModeVoteOnly, nil, nil},
		{coord.ModeDecomposition, two, []string{NewAnswer, Stop}},
		{coord.ModeDecomposition, nil, []string{NewAnswer, Stop}},
		{coord.ModePresent, two, []string{NewAnswer}},
		{coord.Mode("bogus"), two, nil},
	}
	for _, c := range cases {
		t.Run(string(c.mode), func(t *testing.T) {
			var names []string
			for _, s := range WorkflowSpecs(c.mode, c.candidates) {
				names = append(names, s.Name)
				assert.True(t, IsWorkflowTool(s.Name))
				if s.Name == Vote {
					id := s.Parameters["properties"].(map[string]any)["agent_id"].(map[string]any)
					assert.Equal(t, c.candidates, id["enum"])
				}
			}
			assert.Equal(t, c.want, names)
		})
	}
}

func TestIsWorkflowTool(t *testing.T) {
	for name, want := range map[string]bool{
		NewAnswer: true, Vote: true, Stop: true,
		ListFiles: false, ReadFile: false, WriteFile: false, "": false, "VOTE": false,
	} {
		assert.Equal(t, want, IsWorkflowTool(name), name)
	}
}

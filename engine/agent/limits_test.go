package agent

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func limitedModel(t *testing.T, s *llmtest.Server) llm.Model {
	t.Helper()
	m, err := llm.New(llm.Config{Model: "m", BaseURL: s.URL(), Limits: llm.Limits{ReplyBytes: 64 << 10}}, "")
	require.NoError(t, err)
	return m
}

func opening() []llm.Message {
	return []llm.Message{{Role: llm.RoleSystem, Content: "s"}, {Role: llm.RoleUser, Content: "u"}}
}

// A reply stopped by a limit is a failed call the model is told about; the
// step goes on when the next reply keeps within the limits.
func TestReplyOverALimitIsToldToTheModelOnce(t *testing.T) {
	t.Parallel()
	s := llmtest.Start(t,
		llmtest.Text(strings.Repeat("x", 1000)).Forever().Once(),
		llmtest.Call("done", "{}"))
	tr, err := Run(context.Background(), Config[finishState]{Model: limitedModel(t, s), MaxTurns: 5, Messages: opening()}, finish{})
	require.NoError(t, err)
	assert.True(t, tr.State.Done)
	assert.Equal(t, 2, tr.Turns)
	told := s.Requests()[1].Last()
	assert.Equal(t, "user", told.Role)
	assert.Contains(t, told.Content, "Your previous reply was not received")
	assert.Contains(t, told.Content, "reply bytes limit")
}

// Two replies in a row over a limit end the step with the limit's error.
func TestSecondReplyOverALimitFailsTheStep(t *testing.T) {
	t.Parallel()
	s := llmtest.Start(t, llmtest.Text(strings.Repeat("x", 1000)).Forever())
	_, err := Run(context.Background(), Config[finishState]{Model: limitedModel(t, s), MaxTurns: 5, Messages: opening()}, finish{})
	require.Error(t, err)
	assert.True(t, llm.IsReplyLimit(err), "%v", err)
	assert.Equal(t, 2, s.Count())
}

// big answers every call with a result far over the result limit.
type big struct{ finish }

func (big) Handle(_ context.Context, t *Transcript[finishState], reply llm.Message, _ Files) (Turn, error) {
	t.State.Done = true
	return Turn{Done: true, Results: []tools.Result{{Content: strings.Repeat("é", tools.MaxResultBytes)}}}, nil
}

// Every tool result reaches the model cut to the result limit, whatever
// tool produced it.
func TestToolResultsAreCapped(t *testing.T) {
	t.Parallel()
	m := &script{replies: []llm.Message{{ToolCalls: []llm.ToolCall{{ID: "1", Name: "anything", Arguments: "{}"}}}}}
	tr, err := Run(context.Background(), Config[finishState]{Model: m, MaxTurns: 2, Messages: opening()}, big{})
	require.NoError(t, err)
	res := tr.Messages[len(tr.Messages)-1]
	require.Equal(t, llm.RoleTool, res.Role)
	assert.LessOrEqual(t, len(res.Content), tools.MaxResultBytes)
	assert.True(t, utf8.ValidString(res.Content))
	assert.Contains(t, res.Content, "limit for one tool result")
}

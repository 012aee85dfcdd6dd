package llmtest

import (
	"context"
	"errors"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests prove the wire format against the real client the engine uses.

func client(s *Server) *openai.ChatCompletionService {
	c := openai.NewChatCompletionService(
		option.WithBaseURL(s.URL()), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
	return &c
}

func params() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "m1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("decide")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "vote", Parameters: openai.FunctionParameters{"type": "object"},
		})},
	}
}

func TestOpenAIClientNonStreaming(t *testing.T) {
	s := Start(t, Call("vote", `{"agent_id":"agent2"}`).WithoutType())
	c := client(s)
	res, err := c.New(context.Background(), params())
	require.NoError(t, err)
	require.Len(t, res.Choices, 1)
	call := res.Choices[0].Message.ToolCalls[0]
	assert.Equal(t, "vote", call.Function.Name)
	assert.Equal(t, `{"agent_id":"agent2"}`, call.Function.Arguments)
	assert.Empty(t, call.Type)
	assert.Equal(t, "tool_calls", res.Choices[0].FinishReason)
	assert.Equal(t, int64(2), res.Usage.PromptTokens)

	req := s.Requests()[0]
	assert.Equal(t, "Bearer test-key", req.Header.Get("Authorization"))
	assert.False(t, req.Stream)
	assert.True(t, req.HasTool("vote"))
}

func TestOpenAIClientStreamingAccumulates(t *testing.T) {
	s := Start(t,
		Respond(Reply{Text: "thinking about it", ToolCalls: []ToolCall{{Name: "vote", Arguments: `{"agent_id":"agent1","reason":"clear"}`}}}))
	s.ChunkRunes = 5
	p := params()
	p.StreamOptions.IncludeUsage = openai.Bool(true)
	stream := client(s).NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		chunks++
		require.True(t, acc.AddChunk(stream.Current()))
	}
	require.NoError(t, stream.Err())
	assert.Greater(t, chunks, 10)

	msg := acc.Choices[0].Message
	assert.Equal(t, "thinking about it", msg.Content)
	require.Len(t, msg.ToolCalls, 1)
	assert.Equal(t, "call_1_0", msg.ToolCalls[0].ID)
	assert.Equal(t, `{"agent_id":"agent1","reason":"clear"}`, msg.ToolCalls[0].Function.Arguments)
	assert.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
	assert.Equal(t, int64(2), acc.Usage.PromptTokens)
	assert.Equal(t, Reply{Text: "thinking about it", ToolCalls: []ToolCall{{Name: "vote", Arguments: `{"agent_id":"agent1","reason":"clear"}`}}}.CompletionTokens(),
		acc.Usage.CompletionTokens)
	assert.True(t, s.Requests()[0].Stream)
	assert.True(t, s.Requests()[0].IncludeUsage)
}

func TestOpenAIClientSeesErrorStatus(t *testing.T) {
	s := Start(t, Fail(404, "The model `m1` does not exist"))
	_, err := client(s).New(context.Background(), params())
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "got %v", err)
	assert.Equal(t, 404, apiErr.StatusCode)
	assert.Equal(t, "model_not_found", apiErr.Code)
	assert.Equal(t, "The model `m1` does not exist", apiErr.Message)
}

// BenchmarkStreamingRoundTrip measures the server's own cost per call, so
// engine benchmarks can tell it apart from what they measure.
func BenchmarkStreamingRoundTrip(b *testing.B) {
	s := NewServer(Call("vote", `{"agent_id":"agent1","reason":"the clearest answer"}`))
	s.SkipRecording = true
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := client(s)
	p := params()
	p.StreamOptions.IncludeUsage = openai.Bool(true)
	b.ReportAllocs()
	for b.Loop() {
		stream := c.NewStreaming(context.Background(), p)
		for stream.Next() {
		}
		if err := stream.Err(); err != nil {
			b.Fatal(err)
		}
	}
}

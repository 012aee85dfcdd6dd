package llm

import (
	"fmt"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// params translates a Request into the SDK's parameters. Messages are built
// field by field rather than from the SDK's response types so that a replayed
// history (from trace.jsonl) is exactly what was stored, whatever the server
// omitted when it first sent it (tool calls without "type", for one).
func (m *OpenAI) params(model string, req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(model)}
	p.StreamOptions.IncludeUsage = openai.Bool(true)
	for i, msg := range req.Messages {
		mp, err := messageParam(msg)
		if err != nil {
			return p, fmt.Errorf("llm: message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		if t.Parameters != nil {
			fn.Parameters = shared.FunctionParameters(t.Parameters)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if m.defaults.TopP != nil {
		p.TopP = openai.Float(*m.defaults.TopP)
	}
	if m.defaults.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(m.defaults.ReasoningEffort)
	}
	if m.defaults.Verbosity != "" {
		p.Verbosity = openai.ChatCompletionNewParamsVerbosity(m.defaults.Verbosity)
	}
	if len(m.defaults.ExtraBody) > 0 {
		p.SetExtraFields(m.defaults.ExtraBody)
	}
	if req.MaxTokens != nil {
		if m.maxCompletionTokens {
			p.MaxCompletionTokens = openai.Int(*req.MaxTokens)
		} else {
			p.MaxTokens = openai.Int(*req.MaxTokens)
		}
	}
	return p, nil
}

func messageParam(msg Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case RoleSystem:
		p := openai.ChatCompletionSystemMessageParam{}
		p.Content.OfString = openai.String(msg.Content)
		if msg.Name != "" {
			p.Name = openai.String(msg.Name)
		}
		return openai.ChatCompletionMessageParamUnion{OfSystem: &p}, nil
	case RoleDeveloper:
		p := openai.ChatCompletionDeveloperMessageParam{}
		p.Content.OfString = openai.String(msg.Content)
		if msg.Name != "" {
			p.Name = openai.String(msg.Name)
		}
		return openai.ChatCompletionMessageParamUnion{OfDeveloper: &p}, nil
	case RoleUser:
		p := openai.ChatCompletionUserMessageParam{}
		p.Content.OfString = openai.String(msg.Content)
		if msg.Name != "" {
			p.Name = openai.String(msg.Name)
		}
		return openai.ChatCompletionMessageParamUnion{OfUser: &p}, nil
	case RoleAssistant:
		p := openai.ChatCompletionAssistantMessageParam{}
		// With tool calls and no text, content is left out (null) as OpenAI
		// sends it; some servers reject an empty string there.
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			p.Content.OfString = openai.String(msg.Content)
		}
		if msg.Name != "" {
			p.Name = openai.String(msg.Name)
		}
		for _, c := range msg.ToolCalls {
			p.ToolCalls = append(p.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name: c.Name, Arguments: c.Arguments,
					},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &p}, nil
	case RoleTool:
		if msg.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool message without tool_call_id: set it to the id of the call it answers")
		}
		return openai.ToolMessage(msg.Content, msg.ToolCallID), nil
	default:
		return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q: use system, developer, user, assistant or tool", msg.Role)
	}
}

// response turns the accumulated stream into a Response. Tool calls without
// an id (some local servers) get a positional one, because the tool result
// must name the call it answers.
func (m *OpenAI) response(model string, acc *openai.ChatCompletionAccumulator) Response {
	choice := acc.Choices[0]
	msg := Message{Role: RoleAssistant, Content: choice.Message.Content}
	for i, c := range choice.Message.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	usage := coord.Usage{InputTokens: acc.Usage.PromptTokens, OutputTokens: acc.Usage.CompletionTokens}
	cost, ok := m.prices.Cost(model, usage.InputTokens, usage.OutputTokens)
	if !ok && acc.Model != "" {
		cost, ok = m.prices.Cost(acc.Model, usage.InputTokens, usage.OutputTokens)
	}
	usage.CostUSD, usage.Unpriced = cost, !ok
	return Response{Message: msg, Usage: usage, FinishReason: choice.FinishReason, Model: acc.Model}
}

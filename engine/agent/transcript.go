package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
)

// Transcript is one step's conversation plus everything resuming it needs:
// the engine's counters and the policy's state S. It is stored as
// trace.jsonl — one "state" line, then one line per message — so people can
// read it with standard line tools and a retried step resumes from it.
type Transcript[S any] struct {
	// Tag names the launch that owns the transcript; a caller never resumes
	// a transcript with another tag.
	Tag string
	// Binding fingerprints the inputs of the attempt that wrote the
	// transcript (engine/step): a caller resumes it only for the same
	// inputs, so a relaunch shown something else starts fresh.
	Binding  string
	Turns    int // model calls that returned
	Usage    coord.Usage
	Messages []llm.Message
	// Calls record the Toolbox calls of the reply being answered (see
	// CallRecord); Tools counts the step's completed calls per tool.
	Calls []CallRecord
	Tools map[string]ToolStats
	// State is the policy's: its fields share the state line with Tag,
	// Turns and Usage (keys "tag", "binding", "turns", "usage", "tool_calls" and "tool_stats", which S must not use),
	// so the line stays one flat object.
	State S
}

// header is the engine's part of the state line.
type header struct {
	Tag     string               `json:"tag,omitempty"`
	Binding string               `json:"binding,omitempty"`
	Turns   int                  `json:"turns"`
	Usage   coord.Usage          `json:"usage"`
	Calls   []CallRecord         `json:"tool_calls,omitempty"`
	Tools   map[string]ToolStats `json:"tool_stats,omitempty"`
}

type traceLine struct {
	Kind    string          `json:"kind"`
	State   json.RawMessage `json:"state,omitempty"`
	Message *llm.Message    `json:"message,omitempty"`
}

// MarshalJSONL encodes the transcript as trace.jsonl.
func (t *Transcript[S]) MarshalJSONL() ([]byte, error) {
	state, err := t.stateLine()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(traceLine{Kind: "state", State: state}); err != nil {
		return nil, err
	}
	for i := range t.Messages {
		if err := enc.Encode(traceLine{Kind: "message", Message: &t.Messages[i]}); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// stateLine merges the header and the policy's state into one object.
func (t *Transcript[S]) stateLine() (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	policy, err := json.Marshal(t.State)
	if err != nil {
		return nil, fmt.Errorf("encode the policy state: %w", err)
	}
	if err := json.Unmarshal(policy, &fields); err != nil {
		return nil, fmt.Errorf("the policy state must encode as a JSON object: %w", err)
	}
	head, err := json.Marshal(header{Tag: t.Tag, Binding: t.Binding, Turns: t.Turns, Usage: t.Usage, Calls: t.Calls, Tools: t.Tools})
	if err != nil {
		return nil, err
	}
	var own map[string]json.RawMessage
	if err := json.Unmarshal(head, &own); err != nil {
		return nil, err
	}
	for k, v := range own {
		if _, clash := fields[k]; clash {
			return nil, fmt.Errorf("the policy state uses the engine's key %q", k)
		}
		fields[k] = v
	}
	return json.Marshal(fields)
}

// ParseTranscript decodes trace.jsonl. A damaged trace is an error, never a
// silently shorter conversation; Run then starts the step fresh and keeps
// the damaged file (see resume).
func ParseTranscript[S any](data []byte) (*Transcript[S], error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	var t *Transcript[S]
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var line traceLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", n, err)
		}
		switch {
		case line.Kind == "state" && line.State != nil && t == nil:
			var h header
			t = &Transcript[S]{}
			if err := json.Unmarshal(line.State, &h); err != nil {
				return nil, fmt.Errorf("trace line %d: %w", n, err)
			}
			if err := json.Unmarshal(line.State, &t.State); err != nil {
				return nil, fmt.Errorf("trace line %d: %w", n, err)
			}
			t.Tag, t.Binding, t.Turns, t.Usage, t.Calls, t.Tools = h.Tag, h.Binding, h.Turns, h.Usage, h.Calls, h.Tools
		case line.Kind == "message" && line.Message != nil && t != nil:
			t.Messages = append(t.Messages, *line.Message)
		default:
			return nil, fmt.Errorf("trace line %d: unexpected %q record", n, line.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	if t == nil {
		return nil, fmt.Errorf("trace has no state line")
	}
	return t, nil
}

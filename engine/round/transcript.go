package round

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/conclave-ai/conclave/engine/llm"
)

// Transcript is a step's conversation plus the engine state needed to resume
// it. Stored as trace.jsonl: one "state" line, then one line per message, so
// people can read it with standard line tools.
type Transcript struct {
	Tag       string         `json:"tag,omitempty"`
	Messages  []llm.Message  `json:"-"`
	SeenSteps map[string]int `json:"seen_steps"`
	// Known holds every answer the agent has been shown (latest per agent);
	// it resolves vote targets and detects duplicate answers.
	Known      []Answer  `json:"known"`
	HumanSeen  int       `json:"human_seen"`
	Attempts   int       `json:"attempts"`
	Reasons    []string  `json:"reasons,omitempty"`
	Injections int       `json:"injections"`
	Turns      int       `json:"turns"`
	Usage      llm.Usage `json:"usage"`
	// Final is the step's action once it is decided; resuming a finished
	// transcript returns it without another model call.
	Final *Outcome `json:"final,omitempty"`
}

type traceLine struct {
	Kind    string       `json:"kind"`
	State   *Transcript  `json:"state,omitempty"`
	Message *llm.Message `json:"message,omitempty"`
}

// MarshalJSONL encodes the transcript as trace.jsonl.
func (t *Transcript) MarshalJSONL() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(traceLine{Kind: "state", State: t}); err != nil {
		return nil, err
	}
	for i := range t.Messages {
		if err := enc.Encode(traceLine{Kind: "message", Message: &t.Messages[i]}); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// ParseTranscript decodes trace.jsonl. A damaged trace is an error, never a
// silently shorter conversation: resuming from it would repeat paid calls.
func ParseTranscript(data []byte) (*Transcript, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	var t *Transcript
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
			t = line.State
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
	if t.SeenSteps == nil {
		t.SeenSteps = map[string]int{}
	}
	return t, nil
}

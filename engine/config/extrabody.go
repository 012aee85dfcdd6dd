package config

import (
	"encoding/json"
	"fmt"
	"sort"

	"gopkg.in/yaml.v3"
)

// ExtraBody is a JSON object merged into every request of a backend. It is
// held in JSON's own value types (float64, string, bool, []any,
// map[string]any) however it was read, so a config parsed from YAML equals
// the same config after its trip through a workflow input.
type ExtraBody map[string]any

// reservedBodyKeys are request fields Conclave itself sets; overriding them
// from the config would break the conversation, so they are refused.
var reservedBodyKeys = []string{"model", "messages", "tools", "tool_choice", "stream", "stream_options", "n"}

// UnmarshalYAML decodes a mapping and normalizes its values through JSON.
func (e *ExtraBody) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: extra_body must be a mapping of request fields, e.g. extra_body: {top_k: 20}", n.Line)}}
	}
	var raw any
	if err := n.Decode(&raw); err != nil {
		return err
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: extra_body cannot be sent as JSON (%v); use string keys and plain values", n.Line, err)}}
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: extra_body cannot be sent as JSON (%v)", n.Line, err)}}
	}
	*e = m
	return nil
}

// Keys returns the top-level keys in sorted order.
func (e ExtraBody) Keys() []string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// with returns a copy of e with key set, for MassGen's top-level request
// fields (top_k, chat_template_kwargs, …) that Conclave sends through here.
func (e ExtraBody) with(key string, value any) ExtraBody {
	out := ExtraBody{}
	for k, v := range e {
		out[k] = v
	}
	out[key] = value
	return out
}

package config

import (
	"encoding/json"
	"fmt"
	"strings"
)

// MaxCriteria bounds an evaluation-criteria file; criteria go into every
// agent's context, so a runaway file would cost tokens on every call.
const MaxCriteria = 100

// ParseCriteria reads an evaluation-criteria JSON document. MassGen tools
// write it in several shapes, so it accepts a list of strings, a list of
// objects with a "text", "description" or "criterion" field, or an object
// holding either list under "criteria".
func ParseCriteria(data []byte, source string) ([]string, error) {
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %w", source, err)
	}
	if obj, ok := raw.(map[string]any); ok {
		raw, ok = obj["criteria"]
		if !ok {
			return nil, fmt.Errorf(`%s: expected a list of criteria or an object with a "criteria" list`, source)
		}
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: expected a list of criteria", source)
	}
	if len(list) > MaxCriteria {
		return nil, fmt.Errorf("%s: %d criteria, at most %d are allowed", source, len(list), MaxCriteria)
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		var text string
		switch v := item.(type) {
		case string:
			text = v
		case map[string]any:
			for _, k := range []string{"text", "description", "criterion", "name"} {
				if s, ok := v[k].(string); ok && s != "" {
					text = s
					break
				}
			}
		}
		if strings.TrimSpace(text) == "" {
			return nil, fmt.Errorf(`%s: criterion %d is empty or has no "text" field`, source, i+1)
		}
		out = append(out, strings.TrimSpace(text))
	}
	return out, nil
}

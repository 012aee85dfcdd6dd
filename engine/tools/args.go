package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// maxArgsBytes bounds the raw arguments of any call before they are decoded.
// JSON escaping can make a string up to six times longer than its value, so
// this leaves room for a full-size answer while refusing absurd payloads
// before they are held in memory twice. The agent engine's own, lower limit
// on what a model may send in one call is MaxCallBytes.
const maxArgsBytes = 8 << 20

// field describes one string argument of a tool.
type field struct {
	name     string
	required bool // must be present and not null
	nonEmpty bool // must contain something besides white space
	max      int  // limit in bytes of the decoded value; 0 means none
}

// parseArgs decodes the JSON arguments of a call strictly: one object, only
// the given fields, every value a string, nothing after the object.
//
// It reads the object key by key with a json.Decoder instead of decoding into
// a struct with DisallowUnknownFields, because encoding/json matches struct
// fields case-insensitively (it would accept "Content") and silently keeps
// the last of duplicate keys; a model that sends either should be told.
// Empty arguments count as {}, since some models send "" for "no arguments".
func parseArgs(tool, args string, fields ...field) (map[string]string, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s; call %s again with arguments %s",
			tool, fmt.Sprintf(format, a...), tool, shape(fields))
	}
	if err := CheckOmitted(tool, args); err != nil {
		return nil, err
	}
	if len(args) > maxArgsBytes {
		return nil, fail("the arguments are %d bytes, over the %d-byte limit", len(args), maxArgsBytes)
	}
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	dec := json.NewDecoder(strings.NewReader(args))
	tok, err := dec.Token()
	if err != nil {
		return nil, fail("the arguments are not valid JSON (%v)", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fail("the arguments must be a JSON object, not %s", describeToken(tok))
	}
	raw := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fail("the arguments are not valid JSON (%v)", err)
		}
		key, _ := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fail("the arguments are not valid JSON (%v)", err)
		}
		if _, dup := raw[key]; dup {
			return nil, fail("field %q appears more than once", key)
		}
		raw[key] = v
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, fail("the arguments are not valid JSON (%v)", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fail("there is extra text after the JSON object")
	}

	known := map[string]bool{}
	for _, f := range fields {
		known[f.name] = true
	}
	var unknown []string
	for k := range raw {
		if !known[k] {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fail("unknown field %s", strings.Join(unknown, ", "))
	}

	out := make(map[string]string, len(fields))
	for _, f := range fields {
		v, ok := raw[f.name]
		if !ok || bytes.Equal(v, []byte("null")) {
			if f.required {
				return nil, fail("the required field %q is missing", f.name)
			}
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fail("field %q must be a JSON string, not %s", f.name, describeRaw(v))
		}
		if f.nonEmpty && strings.TrimSpace(s) == "" {
			return nil, fail("field %q is empty", f.name)
		}
		if f.max > 0 && len(s) > f.max {
			return nil, fail("field %q is %d bytes, over the %d-byte limit; shorten it", f.name, len(s), f.max)
		}
		out[f.name] = s
	}
	return out, nil
}

// shape renders the expected arguments, e.g. {"agent_id": "<string>"}, so an
// error shows the model a call it can copy.
func shape(fields []field) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		kind := "<string>"
		if !f.required {
			kind = "<string, optional>"
		}
		parts[i] = fmt.Sprintf("%q: %q", f.name, kind)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// describeToken names the kind of a top-level JSON token for an error.
func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "an array"
		}
		return fmt.Sprintf("%q", t.String())
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "that value"
}

// describeRaw names the kind of a raw JSON value for an error.
func describeRaw(v json.RawMessage) string {
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

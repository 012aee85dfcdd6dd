package config

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// CheckJSON holds a JSON document to the rules the YAML loader applies,
// for what encoding/json would accept silently when decoding it into a
// value of type t: an unknown key (reported with its path and the closest
// known key), a key given twice in one object (encoding/json keeps the
// last), and api_key wherever a setting may be (reported without its
// value). Keys match the json tags exactly; encoding/json's
// case-insensitive match would let "Task" stand for "task". Value types
// and syntax are left to json.Unmarshal. A hand-written workflow input
// goes through this before anything runs, so a typo cannot run on
// defaults and a key cannot reach workflow history.
func CheckJSON(data []byte, t reflect.Type) []string {
	c := &jsonChecker{dec: json.NewDecoder(bytes.NewReader(data))}
	c.dec.UseNumber()
	if err := c.value(t, ""); err != nil {
		return nil // a syntax error: json.Unmarshal reports it
	}
	return c.problems
}

type jsonChecker struct {
	dec      *json.Decoder
	problems []string
}

func (c *jsonChecker) value(t reflect.Type, path string) error {
	tok, err := c.dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	t = checkedType(t)
	if d == '{' {
		return c.object(t, path)
	}
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for i := 0; c.dec.More(); i++ {
		if err := c.value(elem, indexPath(path, i)); err != nil {
			return err
		}
	}
	_, err = c.dec.Token()
	return err
}

// object checks one JSON object decoded into t: a struct's keys are its
// json tags; a map's keys are names (agents, models) whose values are
// checked as the map's element type; nil is a value of any shape (an
// extra_body, a wrong type), whose keys are only checked for repeats and
// api_key.
func (c *jsonChecker) object(t reflect.Type, path string) error {
	var fields map[string]reflect.Type
	var known []string
	var elem reflect.Type
	names := false // the keys are data, not settings
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = map[string]reflect.Type{}
		collectJSONFields(t, fields, &known)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
		names = checkedType(elem) != nil
	}
	seen := map[string]bool{}
	for c.dec.More() {
		tok, err := c.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		p := keyPath(path, key)
		if seen[key] {
			c.problems = append(c.problems, fmt.Sprintf("%s: given more than once; keep one", p))
		}
		seen[key] = true
		next := elem
		switch {
		case key == "api_key" && !names:
			c.problems = append(c.problems, fmt.Sprintf("%s: API keys do not belong in the workflow input (it is stored in workflow history); put the key in an environment variable of the worker and name that variable with api_key_env, e.g. api_key_env: %s", p, DefaultAPIKeyEnv))
		case fields != nil:
			ft, ok := fields[key]
			if !ok {
				c.problems = append(c.problems, unknownJSONKey(key, path, known))
			}
			next = ft
		}
		if err := c.value(next, p); err != nil {
			return err
		}
	}
	_, err := c.dec.Token()
	return err
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkedType is the type whose keys a JSON value is checked against, or
// nil when any key goes: an interface, or a type that decodes itself
// (time.Time). Config decodes itself only to start from the defaults, so
// its fields are checked.
func checkedType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface {
		return nil
	}
	if t != reflect.TypeFor[Config]() && (reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)) {
		return nil
	}
	return t
}

// collectJSONFields lists a struct's JSON keys as encoding/json sees them,
// embedded structs' fields included.
func collectJSONFields(t reflect.Type, fields map[string]reflect.Type, known *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			if ft := checkedType(f.Type); ft != nil && ft.Kind() == reflect.Struct {
				collectJSONFields(ft, fields, known)
				continue
			}
			if !f.IsExported() {
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
		*known = append(*known, name)
	}
}

func unknownJSONKey(key, parent string, known []string) string {
	where := "at the top level"
	if parent != "" {
		where = "in " + parent
	}
	hint := ""
	if i := slices.IndexFunc(known, func(k string) bool { return strings.EqualFold(k, key) }); i >= 0 {
		hint = fmt.Sprintf(" (did you mean %q?)", known[i])
	} else if s := suggest(key, known); s != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", s)
	} else if isMassGenKey(key) {
		hint = " (a MassGen setting, read from YAML only: the workflow input holds the config as Conclave runs it, which `conclave validate --config FILE --json` prints)"
	}
	return fmt.Sprintf("unknown key %q %s%s", key, where, hint)
}

// isMassGenKey reports whether a key is one the YAML loader maps or
// accepts for MassGen's sake.
func isMassGenKey(key string) bool {
	for _, m := range []map[string]ignoredKey{topCompat, orchestratorCompat, timeoutCompat, backendCompat} {
		if _, ok := m[key]; ok {
			return true
		}
	}
	return slices.Contains(requestFields, key) || slices.Contains([]string{
		"agent", "timeout_settings", "coordination", "timeout", "presenter_agent", "skip_final_presentation",
		"max_orchestration_restarts", "append_system_prompt", "thinking",
	}, key)
}

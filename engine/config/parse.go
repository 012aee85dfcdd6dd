package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// document is the YAML file: a Config plus the single-agent form `agent:`.
type document struct {
	Config `yaml:",inline"`
	One    *Agent `yaml:"agent"`
}

// Load reads and parses the config file at path.
func Load(path string) (*Config, error) {
	cfg, _, err := LoadWithWarnings(path)
	return cfg, err
}

// LoadWithWarnings reads and parses the config file at path, returning what
// the parser accepted without acting on it apart from the errors.
func LoadWithWarnings(path string) (*Config, []Warning, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, nil, err
	}
	return ParseWithWarnings(data, path)
}

// readConfigFile reads a regular file of at most MaxConfigFileBytes; a
// device, a pipe or a larger file is refused before it fills memory.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read config %s: not a regular file; give the path of a YAML file", path)
	}
	tooBig := fmt.Errorf("read config %s: larger than %d bytes (%d KiB), the most a config file may hold; a session's config is at most %d KiB as JSON", path, MaxConfigFileBytes, MaxConfigFileBytes>>10, MaxConfigJSONBytes>>10)
	if st.Size() > MaxConfigFileBytes {
		return nil, tooBig
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if len(data) > MaxConfigFileBytes {
		return nil, tooBig // it grew while being read
	}
	return data, nil
}

// Parse decodes a YAML config strictly, applies defaults and validates it.
// source names the input in messages ("config.yaml:12: …"). Every problem
// found is reported at once, joined with errors.Join; validation problems
// wrap a *FieldError. MassGen's settings are accepted as
// ParseWithWarnings describes; its warnings are dropped.
func Parse(data []byte, source string) (*Config, error) {
	cfg, _, err := ParseWithWarnings(data, source)
	return cfg, err
}

// ParseWithWarnings is Parse that also returns the warnings: MassGen
// settings accepted without being acted on, and settings mapped onto
// Conclave's. Warnings come back with errors too, so a caller can show
// everything in one pass.
func ParseWithWarnings(data []byte, source string) (*Config, []Warning, error) {
	if source == "" {
		source = "config"
	}
	var root yaml.Node
	if err := safeDecode(func() error { return yaml.Unmarshal(data, &root) }); err != nil {
		return nil, nil, syntaxError(source, err)
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].ShortTag() == "!!null" {
		return nil, nil, fmt.Errorf("%s: the config is empty; it needs at least an `agents:` list", source)
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%s:%d: the config must be a mapping with the keys agents (or agent), orchestrator and prices", source, top.Line)
	}
	idx := indexNodes(top)
	p := problems{source: source}
	mg := scanMassGen(top, source)

	doc := document{Config: Config{Orchestrator: DefaultOrchestrator()}}
	more, err := p.decode(data, &doc, idx, mg.keys)
	if err != nil {
		return nil, mg.warnings, err
	}
	for _, e := range mg.errs {
		p.at(e.line, e.msg)
	}
	// yaml.v3 leaves a mapping with a repeated key undecoded, so
	// validating what was decoded would report its settings as missing.
	fatal := p.repeated
	if more {
		p.add(fmt.Sprintf("%s: only one YAML document is allowed; remove the second `---` and what follows it", source))
		fatal = true
	}
	agentsKey, oneKey := idx.top("agents"), idx.top("agent")
	if agentsKey != nil && oneKey != nil {
		p.at(oneKey.Line, fmt.Sprintf("use either `agent:` (one agent) or `agents:` (a list), not both; `agents:` is at line %d", agentsKey.Line))
		fatal = true
	}
	if fatal {
		return nil, mg.warnings, errors.Join(p.errs...)
	}

	single := oneKey != nil
	if doc.One != nil {
		doc.Agents = []Agent{*doc.One}
	}
	cfg := &doc.Config
	mg.apply(cfg, &p, idx)
	slices.SortStableFunc(mg.warnings, func(a, b Warning) int { return a.Line - b.Line })
	cfg.ApplyDefaults()
	// Values are checked even when keys were wrong, so one pass shows every
	// problem; a setting that failed to decode is not reported twice.
	if err := cfg.Validate(); err != nil {
		p.validation(err, idx, single)
	}
	if err := cfg.ValidateStart(); err != nil {
		p.validation(err, idx, single)
	}
	if len(p.errs) > 0 {
		return nil, mg.warnings, errors.Join(p.errs...)
	}
	return cfg, mg.warnings, nil
}

// decode decodes data into out strictly: an API key anywhere is refused
// with the message that says where keys belong, and every unknown key and
// value of the wrong type is added in the user's terms, with its line.
// compat holds keys MassGen compatibility took charge of, which are not
// unknown. The error is YAML that cannot be decoded at all; more says a
// second document follows the first.
func (p *problems) decode(data []byte, out any, idx *nodeIndex, compat map[*yaml.Node]bool) (more bool, err error) {
	// A key in the file would be copied into workflow history and session
	// files, so it is refused outright, before strict decoding could report
	// it as a mere unknown key.
	// Other credential-looking names (token, password, Authorization, …)
	// are refused the same way; prices are keyed by model names, not
	// settings. Values are never quoted.
	for _, k := range idx.keys {
		if k.key != k.val && SecretKeyName(k.key.Value) && parentPath(k.path) != "prices" && !mcpSecretRef(k.path) {
			p.at(k.key.Line, fmt.Sprintf("%s: API keys do not belong in the config, nor do tokens, passwords or other credentials (the config is stored in workflow history and session files); put the key in an environment variable and name that variable with api_key_env, e.g. api_key_env: OPENAI_API_KEY", k.path))
		}
	}
	p.wholeNumbers(idx)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := safeDecode(func() error { return dec.Decode(out) }); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return false, syntaxError(p.source, err)
		}
		for _, msg := range te.Errors {
			p.decodeError(msg, idx, compat)
		}
	}
	return dec.Decode(new(yaml.Node)) != io.EOF, nil
}

// YAMLFile is a YAML file other than a config (a pipeline file) decoded
// as strictly as a config, with its problems located on its lines.
type YAMLFile struct {
	p   problems
	idx *nodeIndex
}

// DecodeYAML decodes data, one YAML mapping, into out as Parse decodes a
// config: an api_key anywhere is refused with the usual message, and every
// unknown key or value of the wrong type is reported with its line, its
// path and the closest known key. YAML that cannot be read at all is the
// error; the problems found are collected for Err, with what the caller
// adds (Add).
func DecodeYAML(data []byte, source string, out any) (*YAMLFile, error) {
	var root yaml.Node
	if err := safeDecode(func() error { return yaml.Unmarshal(data, &root) }); err != nil {
		return nil, syntaxError(source, err)
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: the file must be a YAML mapping", source)
	}
	f := &YAMLFile{p: problems{source: source, types: typesOf(reflect.TypeOf(out))}, idx: indexNodes(root.Content[0])}
	more, err := f.p.decode(data, out, f.idx, nil)
	if err != nil {
		return nil, err
	}
	if more {
		return nil, fmt.Errorf("%s: only one YAML document is allowed; remove the second `---` and what follows it", source)
	}
	return f, nil
}

// Add adds a problem, at the line of path (a field path such as
// steps[1].backend) or of its nearest ancestor in the file; each
// *FieldError that err joins is placed at its own path's line instead.
func (f *YAMLFile) Add(path string, err error) {
	if err == nil {
		return
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		line := f.idx.line(path)
		var fe *FieldError
		if errors.As(e, &fe) {
			line = f.idx.line(fe.Path)
		}
		if line > 0 && f.p.unreadable[line] {
			continue // that setting's value is already reported as unreadable
		}
		f.p.wrapAt(line, e)
	}
}

// Err joins every problem found, or is nil.
func (f *YAMLFile) Err() error { return errors.Join(f.p.errs...) }

// typesOf lists the struct types reachable from t by the name yaml.v3
// prints, for the messages about their keys.
func typesOf(t reflect.Type) map[string]reflect.Type {
	found := map[string]reflect.Type{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || found[t.String()] != nil {
			return
		}
		found[t.String()] = t
		for i := range t.NumField() {
			walk(t.Field(i).Type)
		}
	}
	walk(t)
	return found
}

// safeDecode turns a panic inside the YAML decoder into an error: yaml.v3
// panics on some malformed merge keys (`<<` with a mapping as a key), and a
// bad file must never crash the worker or the CLI.
func safeDecode(decode func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML cannot be decoded (%v); check merge keys (<<) and anchors", r)
		}
	}()
	return decode()
}

// problems collects messages prefixed with the source and, when known, the line.
type problems struct {
	source string
	errs   []error
	// unreadable holds the lines of values that failed to decode; the
	// zero value left in their place is not reported again by validation.
	unreadable map[int]bool
	// types are the decoded struct types by name; nil means a config's
	// (structTypes).
	types map[string]reflect.Type
	// repeated says a mapping has a key twice.
	repeated bool
}

// typ returns the decoded struct type yaml.v3 names, or nil.
func (p *problems) typ(name string) reflect.Type {
	name = strings.TrimPrefix(name, "*")
	if p.types != nil {
		return p.types[name]
	}
	return structTypes[name]
}

// wholeNumbers refuses a fraction where a setting takes a whole number:
// yaml.v3 would truncate max_tokens: 1.5 to 1 without a word.
func (p *problems) wholeNumbers(idx *nodeIndex) {
	for _, k := range idx.keys {
		if k.key == k.val || k.val.Kind != yaml.ScalarNode || k.val.ShortTag() != "!!float" ||
			!intKeys[k.key.Value] || strings.Contains(k.path, "extra_body") || parentPath(k.path) == "prices" ||
			strings.HasPrefix(k.path, "timeout_settings") { // MassGen's fractions of seconds, rounded up there
			continue
		}
		var f float64
		if err := k.val.Decode(&f); err != nil || f == math.Trunc(f) {
			continue
		}
		if p.unreadable == nil {
			p.unreadable = map[int]bool{}
		}
		p.unreadable[k.val.Line] = true
		p.at(k.val.Line, fmt.Sprintf("%s: expected a whole number, got %s", k.path, describeNode(k.val)))
	}
}

// intKeys are the names of the settings that take whole numbers.
var intKeys = func() map[string]bool {
	keys := map[string]bool{}
	for _, t := range []reflect.Type{reflect.TypeFor[Backend](), reflect.TypeFor[Orchestrator]()} {
		for i := range t.NumField() {
			f := t.Field(i)
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Int {
				name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				keys[name] = true
			}
		}
	}
	return keys
}()

func (p *problems) add(msg string) { p.errs = append(p.errs, errors.New(msg)) }

func (p *problems) at(line int, msg string) { p.wrapAt(line, errors.New(msg)) }

func (p *problems) wrapAt(line int, err error) {
	if line > 0 {
		p.errs = append(p.errs, fmt.Errorf("%s:%d: %w", p.source, line, err))
	} else {
		p.errs = append(p.errs, fmt.Errorf("%s: %w", p.source, err))
	}
}

// validation adds Validate's problems with their lines, in file order so a
// reader can fix them top to bottom. In the single-agent form the paths say
// agent.… as the file does, not agents[0].….
func (p *problems) validation(err error, idx *nodeIndex, single bool) {
	type located struct {
		line int
		err  error
	}
	var found []located
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FieldError
		if !errors.As(e, &fe) {
			found = append(found, located{0, e})
			continue
		}
		if single && strings.HasPrefix(fe.Path, "agents[0]") {
			fe = &FieldError{Path: "agent" + strings.TrimPrefix(fe.Path, "agents[0]"), Problem: fe.Problem}
		}
		found = append(found, located{idx.line(fe.Path), fe})
	}
	slices.SortStableFunc(found, func(a, b located) int { return a.line - b.line })
	for _, f := range found {
		if f.line > 0 && p.unreadable[f.line] {
			continue // that setting's value is already reported as unreadable
		}
		p.wrapAt(f.line, f.err)
	}
}

var (
	unknownFieldRe = regexp.MustCompile(`^line (\d+): field (.+) not found in type (\S+)$`)
	wrongTypeRe    = regexp.MustCompile("^line (\\d+): cannot unmarshal (\\S+)(?: `(.*)`)? into (\\S+)$")
	lineRe         = regexp.MustCompile(`^line (\d+): (.*)$`)
)

// decodeError rewrites one of yaml.v3's strict-decoding messages in the
// user's terms: the file, the line, the field path, what was expected.
// compat holds the keys MassGen compatibility took charge of, which are not
// unknown.
func (p *problems) decodeError(msg string, idx *nodeIndex, compat map[*yaml.Node]bool) {
	if m := unknownFieldRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		name := m[2]
		if SecretKeyName(name) {
			return // already refused with a better message
		}
		where := "at the top level"
		for _, k := range idx.keys {
			if k.key.Line == line && k.key.Value == name {
				if compat[k.key] {
					return
				}
				if parent := parentPath(k.path); parent != "" {
					where = "in " + parent
				}
				break
			}
		}
		hint := ""
		if s := suggest(name, keysOf(p.typ(m[3]))); s != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		p.at(line, fmt.Sprintf("unknown key %q %s%s", name, where, hint))
		return
	}
	if m := wrongTypeRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if p.unreadable == nil {
			p.unreadable = map[int]bool{}
		}
		p.unreadable[line] = true
		want := describeType(m[4], p.typ(m[4]) != nil)
		for _, k := range idx.keys {
			if k.val.Line == line && sameValue(k.val, m[3]) {
				p.at(line, fmt.Sprintf("%s: expected %s, got %s", k.path, want, describeNode(k.val)))
				return
			}
		}
		p.at(line, fmt.Sprintf("expected %s, got %s", want, m[2]))
		return
	}
	if m := lineRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if strings.HasPrefix(m[2], "mapping key ") && strings.Contains(m[2], " already defined at line ") {
			p.repeated = true
		}
		p.at(line, m[2])
		return
	}
	p.add(p.source + ": " + msg)
}

func syntaxError(source string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := lineRe.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s:%s: invalid YAML: %s", source, m[1], m[2])
	}
	return fmt.Errorf("%s: invalid YAML: %s", source, msg)
}

package config

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Warning is a setting the parser accepted but does not act on as MassGen
// would. A run proceeds with warnings; `conclave validate --strict` refuses
// them.
type Warning struct {
	Source string `json:"source"`
	Line   int    `json:"line,omitempty"`
	Path   string `json:"path"`
	// Message says what Conclave does instead.
	Message string `json:"message"`
	// Note marks a setting that changes nothing a run depends on (display,
	// local folders, a feature switched off): reported, never refused.
	Note bool `json:"note,omitempty"`
}

func (w Warning) String() string {
	kind := "warning"
	if w.Note {
		kind = "note"
	}
	if w.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s: %s", w.Source, w.Line, kind, w.Path, w.Message)
	}
	return fmt.Sprintf("%s: %s: %s: %s", w.Source, kind, w.Path, w.Message)
}

// massgen recognizes MassGen's settings that are not Conclave fields: keys
// it maps onto Conclave's (timeout_settings, orchestrator.coordination,
// presenter_agent, …) and keys it accepts and reports. It runs on the node
// tree before strict decoding; keys lists what it took charge of, so that
// the decoder's "unknown key" for them is dropped, and apply then sets the
// decoded config.
type massgen struct {
	source   string
	keys     map[*yaml.Node]bool
	warnings []Warning
	errs     []lineError
	actions  []func(*Config, *problems)
	// orch holds the orchestrator-level settings seen so far, by name, so
	// the same setting in two places (flat and nested) is an error.
	orch map[string]keyedNode
	// coordination is the Orchestrator fields found under
	// orchestrator.coordination, decoded onto the config by apply.
	coordination *yaml.Node
	// strategySet: final_answer_strategy is in the file, so it wins over
	// skip_final_presentation.
	strategySet bool
}

type lineError struct {
	line int
	msg  string
}

func scanMassGen(top *yaml.Node, source string) *massgen {
	m := &massgen{source: source, keys: map[*yaml.Node]bool{}, orch: map[string]keyedNode{}}
	orchFields := knownKeys("config.Orchestrator")
	for k, v := range pairs(top) {
		switch name := k.Value; {
		case name == "orchestrator" && v.Kind == yaml.MappingNode:
			for ok, ov := range pairs(v) {
				path := keyPath("orchestrator", ok.Value)
				if slices.Contains(orchFields, ok.Value) {
					m.claim(ok.Value, keyedNode{path, ok, ov})
					m.orchestratorField(ok, ov, path)
					continue
				}
				m.orchestratorKey(ok, ov, path)
			}
		case name == "agents" && v.Kind == yaml.SequenceNode:
			for i, a := range v.Content {
				m.agent(a, indexPath("agents", i), i)
			}
		case name == "agent":
			m.agent(v, "agent", 0)
		case name == "timeout_settings":
			m.keys[k] = true
			m.timeouts(v, name)
		default:
			if ig, ok := topCompat[name]; ok {
				m.keys[k] = true
				m.ignore(k, v, name, ig)
			}
		}
	}
	return m
}

// orchestratorField notes a Conclave orchestrator setting given at
// orchestrator level; the decoder sets it.
func (m *massgen) orchestratorField(k, v *yaml.Node, path string) {
	if k.Value == "final_answer_strategy" {
		m.strategySet = true
	}
	if k.Value == "voting_sensitivity" {
		m.votingSensitivity(v, path)
	}
	if k.Value == "round_evaluator_before_checklist" || k.Value == "orchestrator_managed_round_evaluator" {
		m.actions = append(m.actions, func(c *Config, _ *problems) {
			o := c.Orchestrator
			on := (k.Value == "round_evaluator_before_checklist" && o.RoundEvaluatorBeforeChecklist) ||
				(k.Value == "orchestrator_managed_round_evaluator" && o.OrchestratorManagedRoundEvaluator)
			switch {
			case on && o.VotingSensitivity != SensitivityChecklistGated:
				m.warn(k.Line, path, "the round evaluator runs only with voting_sensitivity: checklist_gated; this setting does nothing", false)
			case on && k.Value == "orchestrator_managed_round_evaluator" && !o.RoundEvaluatorBeforeChecklist:
				m.warn(k.Line, path, "does nothing without round_evaluator_before_checklist: true", false)
			}
		})
	}
}

// orchestratorKey handles a MassGen orchestrator setting (not a Conclave
// field), in orchestrator or orchestrator.coordination. It reports whether
// the key is known.
func (m *massgen) orchestratorKey(k, v *yaml.Node, path string) bool {
	name := k.Value
	switch name {
	case "coordination":
		if path != "orchestrator.coordination" {
			return false
		}
		m.keys[k] = true
		m.coordinationBlock(v, path)
	case "timeout":
		m.keys[k] = true
		m.timeouts(v, path)
	case "presenter_agent":
		m.keys[k] = true
		if !m.claim("presenter", keyedNode{path, k, v}) {
			return true
		}
		decodeInto(m, v, path, "a string", func(c *Config, s string) { c.Orchestrator.Presenter = s })
	case "skip_final_presentation":
		m.keys[k] = true
		decodeInto(m, v, path, "true or false", func(c *Config, skip bool) {
			if skip {
				m.skipFinalPresentation(c, k.Line, path)
			}
		})
	case "max_orchestration_restarts":
		m.keys[k] = true
		decodeInto(m, v, path, "a whole number", func(_ *Config, n int) {
			if n > 0 {
				m.warn(k.Line, path, "Conclave does not evaluate and restart a finished coordination; the session ends with its final answer", false)
			}
		})
	default:
		ig, ok := orchestratorCompat[name]
		if !ok {
			return false
		}
		m.keys[k] = true
		m.ignore(k, v, path, ig)
	}
	return true
}

// skipFinalPresentation applies MassGen's skip_final_presentation: true,
// as MassGen resolves it: the presenter's stored answer is the final one
// (final_answer_strategy: winner_reuse, no presentation model call) unless
// final_answer_strategy is set, which then wins — except with skip_voting,
// where there is no presentation stage at all. Decomposition mode always
// presents: each agent holds only its part, so the presenter must
// assemble them.
func (m *massgen) skipFinalPresentation(c *Config, line int, path string) {
	o := &c.Orchestrator
	switch {
	case o.CoordinationMode == ModeDecomposition:
		m.warn(line, path, "ignored in decomposition mode, where the presenter must assemble the parts (final_answer_strategy: winner_reuse is refused there for the same reason)", false)
	case m.strategySet && !o.SkipVoting:
		m.warn(line, path, fmt.Sprintf("final_answer_strategy: %s is also set and wins, as in MassGen (remove it to skip the presentation)", o.FinalAnswerStrategy), false)
	default:
		msg := "honoured as final_answer_strategy: winner_reuse (the stored answer is the final one, without a presentation model call)"
		if m.strategySet && o.FinalAnswerStrategy != FinalWinnerReuse {
			msg += fmt.Sprintf("; with skip_voting it wins over final_answer_strategy: %s, as in MassGen", o.FinalAnswerStrategy)
		}
		o.FinalAnswerStrategy = FinalWinnerReuse
		m.warn(line, path, msg, true)
	}
}

// coordinationBlock reads orchestrator.coordination: Conclave's own
// settings nested MassGen's way, and MassGen's coordination settings.
func (m *massgen) coordinationBlock(n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		if n.ShortTag() != "!!null" {
			m.errs = append(m.errs, lineError{n.Line, path + ": expected a mapping, got " + describeNode(n)})
		}
		return
	}
	orchFields := knownKeys("config.Orchestrator")
	fields := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for k, v := range pairs(n) {
		p := keyPath(path, k.Value)
		if slices.Contains(orchFields, k.Value) {
			if m.claim(k.Value, keyedNode{p, k, v}) {
				fields.Content = append(fields.Content, k, v)
				m.orchestratorField(k, v, p)
			}
			continue
		}
		if k.Value == "coordination" || !m.orchestratorKey(k, v, p) {
			known := append(orchFields, mapKeys(orchestratorCompat)...)
			known = append(known, "presenter_agent", "skip_final_presentation", "max_orchestration_restarts", "timeout")
			hint := ""
			if s := suggest(k.Value, known); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			m.errs = append(m.errs, lineError{k.Line, fmt.Sprintf("unknown key %q in %s%s", k.Value, path, hint)})
		}
	}
	if len(fields.Content) > 0 {
		m.coordination = fields
	}
}

// claim records an orchestrator setting; the same setting twice (flat and
// nested, or presenter and presenter_agent) is an error.
func (m *massgen) claim(name string, at keyedNode) bool {
	if prev, ok := m.orch[name]; ok {
		m.errs = append(m.errs, lineError{at.key.Line, fmt.Sprintf("%s: %s is also set at line %d (%s); keep one", at.path, name, prev.key.Line, prev.path)})
		return false
	}
	m.orch[name] = at
	return true
}

// votingSensitivity maps MassGen's lenient and strict (prompt wording
// Conclave does not have) onto balanced.
func (m *massgen) votingSensitivity(v *yaml.Node, path string) {
	if v.Kind != yaml.ScalarNode {
		return
	}
	if v.Value != "lenient" && v.Value != "strict" {
		return
	}
	m.actions = append(m.actions, func(c *Config, _ *problems) {
		c.Orchestrator.VotingSensitivity = SensitivityBalanced
	})
	m.warn(v.Line, path, fmt.Sprintf("%q behaves like balanced in Conclave (the voting prompt has one wording)", v.Value), false)
}

// timeouts reads timeout_settings (or MassGen's older orchestrator.timeout).
func (m *massgen) timeouts(n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		if n.ShortTag() != "!!null" {
			m.errs = append(m.errs, lineError{n.Line, path + ": expected a mapping, got " + describeNode(n)})
		}
		return
	}
	for k, v := range pairs(n) {
		p := keyPath(path, k.Value)
		if slices.Contains(timeoutFields, k.Value) {
			m.timeout(k, v, p)
			continue
		}
		if ig, ok := timeoutCompat[k.Value]; ok {
			m.ignore(k, v, p, ig)
			continue
		}
		hint := ""
		if s := suggest(k.Value, append(mapKeys(timeoutCompat), timeoutFields...)); s != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		m.errs = append(m.errs, lineError{k.Line, fmt.Sprintf("unknown key %q in %s%s", k.Value, path, hint)})
	}
}

// timeout sets one of timeoutFields from timeout_settings (or
// orchestrator.timeout): a number of seconds, a fraction rounded up. The
// orchestrator deadline must be positive; a round timeout may be 0 (none).
func (m *massgen) timeout(k, v *yaml.Node, p string) {
	if !m.claim(k.Value, keyedNode{p, k, v}) || v.ShortTag() == "!!null" {
		return
	}
	var s float64
	if err := v.Decode(&s); err != nil {
		m.errs = append(m.errs, lineError{v.Line, fmt.Sprintf("%s: expected a number of seconds, got %s", p, describeNode(v))})
		return
	}
	deadline := k.Value == "orchestrator_timeout_seconds"
	switch {
	case deadline && !(s > 0 && s <= maxTimeoutSeconds):
		// Checked here so the message names the key as written.
		m.errs = append(m.errs, lineError{v.Line, fmt.Sprintf("%s: %s is out of range; use 1 to %d seconds (a run always has a deadline)", p, v.Value, maxTimeoutSeconds)})
		return
	case !deadline && !(s >= 0 && s <= maxTimeoutSeconds):
		m.errs = append(m.errs, lineError{v.Line, fmt.Sprintf("%s: %s is out of range; %s", p, v.Value, roundTimeoutRange(k.Value))})
		return
	}
	// MassGen takes fractions; Conclave counts whole seconds.
	n := int(math.Ceil(s))
	m.actions = append(m.actions, func(c *Config, _ *problems) {
		o := &c.Orchestrator
		switch k.Value {
		case "orchestrator_timeout_seconds":
			o.OrchestratorTimeoutSeconds = n
		case "initial_round_timeout_seconds":
			o.InitialRoundTimeoutSeconds = n
		case "subsequent_round_timeout_seconds":
			o.SubsequentRoundTimeoutSeconds = n
		case "round_timeout_grace_seconds":
			o.RoundTimeoutGraceSeconds = n
		}
	})
}

func (m *massgen) agent(n *yaml.Node, path string, i int) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for k, v := range pairs(n) {
		switch k.Value {
		case "backend":
			m.backend(v, path+".backend", i)
		case "memory":
			m.keys[k] = true
			m.ignore(k, v, path+".memory", topCompat["memory"])
		case "append_system_prompt":
			m.keys[k] = true
			p := path + ".append_system_prompt"
			decodeInto(m, v, p, "a string", func(c *Config, s string) {
				if i < len(c.Agents) && s != "" {
					a := &c.Agents[i]
					a.SystemMessage = strings.TrimSpace(a.SystemMessage + "\n\n" + s)
				}
			})
		}
	}
}

func (m *massgen) backend(n *yaml.Node, path string, i int) {
	if n.Kind != yaml.MappingNode {
		return
	}
	typ := ""
	for k, v := range pairs(n) {
		if k.Value == "type" {
			typ = v.Value
		}
	}
	for k, v := range pairs(n) {
		name, p := k.Value, keyPath(path, k.Value)
		switch {
		case slices.Contains(requestFields, name) || (name == "thinking" && typ == "claude"):
			m.keys[k] = true
			m.passThrough(v, p, name, i)
		case name == "thinking":
			m.keys[k] = true
			m.ignore(k, v, p, ignoredKey{"extended thinking is sent only to type: claude; use reasoning.effort", false})
		case strings.HasPrefix(name, "command_line_docker_") || name == "command_execution_prefix" || name == "command_execution_venv_path":
			m.keys[k] = true
			m.ignore(k, v, p, ignoredKey{whyDocker, true})
		case name == "reasoning" && v.Kind == yaml.MappingNode:
			if prov, ok := LookupProvider(typ); ok && prov.IgnoresEffort {
				m.warn(k.Line, p, fmt.Sprintf("%s ignores reasoning_effort, so it is not sent; extended thinking is thinking: {type: enabled, budget_tokens: N}", prov.Name), false)
				m.actions = append(m.actions, func(c *Config, _ *problems) {
					if i < len(c.Agents) {
						c.Agents[i].Backend.Reasoning = nil
					}
				})
			}
			for rk := range pairs(v) {
				if rk.Value == "summary" {
					m.keys[rk] = true
					m.warn(rk.Line, p+".summary", "reasoning summaries exist only in OpenAI's Responses API; Conclave uses chat completions and does not request them", true)
				}
			}
		case name == "text" && v.Kind == yaml.MappingNode:
			if prov, ok := LookupProvider(typ); ok && !prov.Verbosity {
				m.warn(k.Line, p, fmt.Sprintf("%s does not take verbosity; it is not sent", prov.Name), false)
				m.actions = append(m.actions, func(c *Config, _ *problems) {
					if i < len(c.Agents) {
						c.Agents[i].Backend.Text = nil
					}
				})
			}
		default:
			if ig, ok := backendCompat[name]; ok {
				m.keys[k] = true
				m.ignore(k, v, p, ig)
			}
		}
	}
}

// passThrough sends a MassGen request field through extra_body.
func (m *massgen) passThrough(v *yaml.Node, path, name string, i int) {
	var raw any
	if err := v.Decode(&raw); err != nil {
		m.errs = append(m.errs, lineError{v.Line, path + ": " + err.Error()})
		return
	}
	data, err := json.Marshal(raw)
	var value any
	if err == nil {
		err = json.Unmarshal(data, &value)
	}
	if err != nil {
		m.errs = append(m.errs, lineError{v.Line, fmt.Sprintf("%s: cannot be sent as JSON (%v)", path, err)})
		return
	}
	m.actions = append(m.actions, func(c *Config, p *problems) {
		if i >= len(c.Agents) {
			return
		}
		b := &c.Agents[i].Backend
		if _, dup := b.ExtraBody[name]; dup {
			p.at(v.Line, fmt.Sprintf("%s: also set in extra_body; keep one", path))
			return
		}
		b.ExtraBody = b.ExtraBody.with(name, value)
	})
}

// decodeInto decodes v as T once the document is decoded and hands it to
// set; a wrong type is an error at v's line.
func decodeInto[T any](m *massgen, v *yaml.Node, path, want string, set func(*Config, T)) {
	var x T
	if err := v.Decode(&x); err != nil {
		m.errs = append(m.errs, lineError{v.Line, fmt.Sprintf("%s: expected %s, got %s", path, want, describeNode(v))})
		return
	}
	m.actions = append(m.actions, func(c *Config, _ *problems) { set(c, x) })
}

func (m *massgen) ignore(k, v *yaml.Node, path string, ig ignoredKey) {
	if ig.display || !active(v) {
		m.warn(k.Line, path, "accepted and ignored: "+ig.why, true)
		return
	}
	m.warn(k.Line, path, "ignored: "+ig.why, false)
}

func (m *massgen) warn(line int, path, msg string, note bool) {
	m.warnings = append(m.warnings, Warning{Source: m.source, Line: line, Path: path, Message: msg, Note: note})
}

// apply sets the MassGen settings on the decoded config.
func (m *massgen) apply(c *Config, p *problems, idx *nodeIndex) {
	if m.coordination != nil {
		if err := m.coordination.Decode(&c.Orchestrator); err != nil {
			if te, ok := err.(*yaml.TypeError); ok {
				for _, msg := range te.Errors {
					p.decodeError(msg, idx, nil)
				}
			} else {
				p.add(p.source + ": " + err.Error())
			}
		}
	}
	for _, a := range m.actions {
		a(c, p)
	}
}

// active reports whether an ignored setting is switched on: anything but
// null, false, zero, empty, or a mapping whose `enabled` is off.
func active(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.AliasNode:
		return n.Alias != nil && active(n.Alias)
	case yaml.SequenceNode:
		return len(n.Content) > 0
	case yaml.MappingNode:
		for k, v := range pairs(n) {
			if k.Value == "enabled" {
				return active(v)
			}
		}
		return len(n.Content) > 0
	}
	switch n.ShortTag() {
	case "!!null":
		return false
	case "!!bool":
		b, _ := strconv.ParseBool(n.Value)
		return b
	case "!!int", "!!float":
		f, err := strconv.ParseFloat(n.Value, 64)
		return err != nil || f != 0
	}
	return strings.TrimSpace(n.Value) != ""
}

// pairs iterates a mapping node's entries.
func pairs(n *yaml.Node) func(func(k, v *yaml.Node) bool) {
	return func(yield func(k, v *yaml.Node) bool) {
		if n == nil || n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !yield(n.Content[i], n.Content[i+1]) {
				return
			}
		}
	}
}

func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

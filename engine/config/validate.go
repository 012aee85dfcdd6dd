package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// FieldError is one problem with one setting. Path names the setting the way
// a user would write it, e.g. agents[1].backend.model or
// prices["gpt-4o-mini"].input.
type FieldError struct {
	Path    string
	Problem string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Problem }

var (
	// Agent ids become directory names and S3 key segments, so they are kept
	// short and free of anything a path or a URL would need to escape. They
	// allow what MassGen configs use (gemini2.5flash, Qwen3-4b); a leading
	// '.' could hide a folder or make "..", so ids start with a letter or digit.
	idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	// Upper case only: it is the convention, and it refuses a pasted API key
	// (almost always mixed case) that would otherwise end up in workflow history.
	envPattern   = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	plainKeyPath = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

const (
	// maxIDLength keeps ids usable as folder names and S3 key segments while
	// allowing MassGen's descriptive ids.
	maxIDLength = 64
	// Step numbers are zero-padded to three digits in storage keys (NNN);
	// step 1000 would break their lexical order.
	maxStepsPerAgent = 999
	// A year keeps the timeout far from time.Duration overflow and still
	// allows any real run.
	maxTimeoutSeconds = 365 * 24 * 3600
)

// Validate reports every problem of a defaulted config at once (joined with
// errors.Join, each a *FieldError), or nil. It checks a config from YAML and
// one decoded from JSON workflow input alike; it never changes the config.
func (c *Config) Validate() error {
	var v validator
	if len(c.Agents) == 0 {
		v.add("agents", "at least one agent is required; add an `agents:` list (or `agent:` with one agent for step mode)")
	}
	firstUse := map[string]int{}
	for i := range c.Agents {
		a := &c.Agents[i]
		p := indexPath("agents", i)
		v.agent(p, a, c.Orchestrator.CoordinationMode)
		// Ids differing only in case would share a folder on a
		// case-insensitive disk (macOS, Windows).
		folded := strings.ToLower(a.ID)
		if j, dup := firstUse[folded]; dup && a.ID != "" {
			if c.Agents[j].ID == a.ID {
				v.add(p+".id", fmt.Sprintf("%q is already the id of agents[%d]; ids must be unique", a.ID, j))
			} else {
				v.add(p+".id", fmt.Sprintf("%q differs from agents[%d]'s %q only in case; ids must differ in more than case, because they name folders", a.ID, j, c.Agents[j].ID))
			}
		} else if !dup {
			firstUse[folded] = i
		}
	}
	v.orchestrator("orchestrator", &c.Orchestrator, c.AgentIDs())
	models := make([]string, 0, len(c.Prices))
	for m := range c.Prices {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		p := keyPath("prices", m)
		if strings.TrimSpace(m) == "" {
			v.add(p, "a price needs a model name")
		}
		v.nonNegativeFloat(p+".input", c.Prices[m].Input)
		v.nonNegativeFloat(p+".output", c.Prices[m].Output)
	}
	return errors.Join(v.errs...)
}

// ValidateBackend checks one backend outside a config (a pipeline's
// default backend, a step's) exactly as an agent's backend is checked,
// with the defaults applied to a copy first, as a config's are: every
// problem at once, each a *FieldError whose path starts with path (e.g.
// backend or steps[2].backend). It never changes b.
func ValidateBackend(path string, b Backend) error {
	b.applyDefaults()
	var v validator
	v.backend(path, &b)
	return errors.Join(v.errs...)
}

type validator struct{ errs []error }

func (v *validator) add(path, problem string) {
	v.errs = append(v.errs, &FieldError{Path: path, Problem: problem})
}

func (v *validator) agent(p string, a *Agent, mode CoordinationMode) {
	switch {
	case a.ID == "":
		v.add(p+".id", "required; give the agent a short id such as agent_a")
	case len(a.ID) > maxIDLength:
		v.add(p+".id", fmt.Sprintf("%q is %d characters; ids are at most %d", a.ID, len(a.ID), maxIDLength))
	case !idPattern.MatchString(a.ID):
		v.add(p+".id", fmt.Sprintf("%q is not a valid id; use letters, digits, '.', '_' and '-', starting with a letter or digit", a.ID))
	case reservedName(a.ID):
		v.add(p+".id", fmt.Sprintf("%q is a device name on Windows (CON, PRN, AUX, NUL, COM1-9, LPT1-9), which cannot name a folder there; choose another id", a.ID))
	}
	b := &a.Backend
	bp := p + ".backend"
	v.backend(bp, b)
	if a.Subtask != "" && mode != ModeDecomposition {
		v.add(p+".subtask", "subtasks are only used with coordination_mode: decomposition; set that mode or remove the subtask")
	}
}

func (v *validator) backend(bp string, b *Backend) {
	prov, known := LookupProvider(b.Type)
	if why, refused := refusedTypes[b.Type]; refused {
		// The rest (a model such types do not need, say) would only be noise.
		v.add(bp+".type", fmt.Sprintf("backend type %q is not supported: it %s", b.Type, why))
		return
	}
	switch {
	case !known:
		v.add(bp+".type", fmt.Sprintf("unsupported backend type %q; use one of: %s (chatcompletion reaches any OpenAI-compatible endpoint through base_url)", b.Type, strings.Join(providerTypes(), ", ")))
	case b.BaseURL == "" && prov.BaseURL == "" && prov.BaseURLEnv == "" && b.Type != BackendOpenAI:
		example := "https://llm.example.com/v1"
		if b.Type == "azure_openai" {
			example = "https://YOUR-RESOURCE.openai.azure.com/openai/v1"
		}
		v.add(bp+".base_url", fmt.Sprintf("required for type %s, which has no default endpoint; e.g. base_url: %s", b.Type, example))
	}
	if strings.TrimSpace(b.Model) == "" {
		v.add(bp+".model", "required; name the model, e.g. gpt-4o-mini")
	}
	if b.BaseURL != "" {
		u, err := url.Parse(b.BaseURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			v.add(bp+".base_url", "must be an http:// or https:// URL such as https://api.openai.com/v1")
		case u.User != nil:
			// The value is not echoed: it holds a credential.
			v.add(bp+".base_url", "must not contain a user or password; credentials belong in the environment variable named by api_key_env")
		case ClassifyHost(u.Hostname()) == LinkLocal:
			v.add(bp+".base_url", refusedHost(u.Hostname()))
		}
	}
	// Empty means "send no key", which only keyless endpoints allow.
	if b.APIKeyEnv != "" || (known && prov.KeyEnv != "") {
		if !envPattern.MatchString(b.APIKeyEnv) {
			// The value is not echoed: it may be a key pasted into the wrong field.
			v.add(bp+".api_key_env", "must be the name of an environment variable in upper case, e.g. OPENAI_API_KEY, not the key itself")
		} else if rule, denied := DeniedKeyEnv(b.APIKeyEnv); denied {
			// No worker would send it (Egress); saying so here stops the
			// session before it starts.
			v.add(bp+".api_key_env", fmt.Sprintf("%s is a worker's infrastructure variable (%s), never sent to a model; name the variable that holds the model's key, e.g. OPENAI_API_KEY", b.APIKeyEnv, rule))
		}
	}
	if t := b.Temperature; t != nil && !(*t >= 0 && *t <= 2) {
		v.add(bp+".temperature", fmt.Sprintf("%v is out of range; use a number from 0 to 2", *t))
	}
	if t := b.TopP; t != nil && !(*t >= 0 && *t <= 1) {
		v.add(bp+".top_p", fmt.Sprintf("%v is out of range; use a number from 0 to 1", *t))
	}
	if n := b.MaxTokens; n != nil && *n < 1 {
		v.add(bp+".max_tokens", fmt.Sprintf("%d is not allowed; use a positive number, or leave it out for the model's default", *n))
	}
	if r := b.Reasoning; r != nil && r.Effort != "" && !plainKeyPath.MatchString(r.Effort) {
		v.add(bp+".reasoning.effort", fmt.Sprintf("%q is not an effort level; use e.g. minimal, low, medium or high", r.Effort))
	}
	if t := b.Text; t != nil && t.Verbosity != "" && !slices.Contains([]string{"low", "medium", "high"}, t.Verbosity) {
		v.add(bp+".text.verbosity", fmt.Sprintf("%q is not one of: low, medium, high", t.Verbosity))
	}
	v.tools(bp, &b.Tools)
	for _, k := range b.ExtraBody.Keys() {
		if slices.Contains(reservedBodyKeys, k) {
			v.add(keyPath(bp+".extra_body", k), "Conclave sets this request field itself; remove it from extra_body")
		}
	}
}

func providerTypes() []string {
	types := make([]string, len(providers))
	for i, p := range providers {
		types[i] = p.Type
	}
	return types
}

func (v *validator) orchestrator(p string, o *Orchestrator, ids []string) {
	oneOf(v, p+".coordination_mode", o.CoordinationMode, ModeVoting, ModeDecomposition)
	oneOf(v, p+".voting_sensitivity", o.VotingSensitivity, SensitivityBalanced, SensitivityChecklistGated)
	oneOf(v, p+".scheduling", o.Scheduling, SchedulingAsync, SchedulingRounds)
	oneOf(v, p+".consensus", o.Consensus, ConsensusMajority, ConsensusPlurality)
	oneOf(v, p+".update_mode", o.UpdateMode, UpdateInject, UpdateRestart)
	oneOf(v, p+".final_answer_strategy", o.FinalAnswerStrategy, FinalWinnerPresent, FinalSynthesize, FinalWinnerReuse)
	oneOf(v, p+".answer_novelty_requirement", o.AnswerNoveltyRequirement, NoveltyLenient, NoveltyBalanced, NoveltyStrict)
	for _, t := range []struct {
		key string
		n   int
	}{
		{"initial_round_timeout_seconds", o.InitialRoundTimeoutSeconds},
		{"subsequent_round_timeout_seconds", o.SubsequentRoundTimeoutSeconds},
		{"round_timeout_grace_seconds", o.RoundTimeoutGraceSeconds},
	} {
		if t.n < 0 || t.n > maxTimeoutSeconds {
			v.add(p+"."+t.key, fmt.Sprintf("%d is out of range; %s", t.n, roundTimeoutRange(t.key)))
		}
	}
	oneOf(v, p+".round_evaluator_transformation_pressure", o.RoundEvaluatorTransformationPressure, PressureGentle, PressureBalanced, PressureAggressive)

	v.atLeast(p+".fairness_lead_cap_answers", o.FairnessLeadCapAnswers, 0)
	v.atLeast(p+".max_midstream_injections_per_round", o.MaxMidstreamInjectionsPerRound, 0)
	v.atLeast(p+".max_checklist_calls_per_round", o.MaxChecklistCallsPerRound, 0)
	v.atLeast(p+".max_revote_rounds", o.MaxRevoteRounds, 0)
	v.atLeast(p+".max_enforcement_attempts", o.MaxEnforcementAttempts, 1)
	// Zero answers would leave nothing to vote on; null is the way to say
	// "no limit".
	if n := o.MaxNewAnswersPerAgent; n != nil && *n < 1 {
		v.add(p+".max_new_answers_per_agent", fmt.Sprintf("%d is not allowed; use 1 or more, or null for unlimited", *n))
	}
	if n := o.MaxNewAnswersGlobal; n != nil && *n < 1 {
		v.add(p+".max_new_answers_global", fmt.Sprintf("%d is not allowed; use 1 or more, or null for unlimited", *n))
	}
	if n := o.MaxStepsPerAgent; n < 1 || n > maxStepsPerAgent {
		v.add(p+".max_steps_per_agent", fmt.Sprintf("%d is out of range; use 1 to %d", n, maxStepsPerAgent))
	}
	if n := o.OrchestratorTimeoutSeconds; n < 1 || n > maxTimeoutSeconds {
		v.add(p+".orchestrator_timeout_seconds", fmt.Sprintf("%d is out of range; use 1 to %d seconds (a run always has a deadline)", n, maxTimeoutSeconds))
	}
	if o.Presenter != "" && !slices.Contains(ids, o.Presenter) {
		v.add(p+".presenter", fmt.Sprintf("%q is not an agent; use one of: %s", o.Presenter, strings.Join(ids, ", ")))
	}
	// Decomposition splits the task: no single agent's answer is the whole
	// result, so the presenter must assemble it.
	if o.CoordinationMode == ModeDecomposition && o.FinalAnswerStrategy == FinalWinnerReuse {
		v.add(p+".final_answer_strategy", "winner_reuse cannot be used with coordination_mode: decomposition, where each agent holds only its part; use winner_present or synthesize")
	}
}

func oneOf[T ~string](v *validator, path string, got T, allowed ...T) {
	if slices.Contains(allowed, got) {
		return
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	v.add(path, fmt.Sprintf("%q is not one of: %s", got, strings.Join(names, ", ")))
}

func (v *validator) atLeast(path string, n, lowest int) {
	if n < lowest {
		v.add(path, fmt.Sprintf("%d is not allowed; use %d or more", n, lowest))
	}
}

// nonNegativeFloat also refuses NaN and infinities, which YAML can express
// (.nan, .inf) but JSON cannot carry into a workflow.
func (v *validator) nonNegativeFloat(path string, f float64) {
	if !(f >= 0) || math.IsInf(f, 0) {
		v.add(path, fmt.Sprintf("%v is not allowed; use a finite number, 0 or more", f))
	}
}

// keyPath appends a mapping key to a field path, quoting keys (such as model
// names) that are not plain snake_case.
func keyPath(parent, key string) string {
	if !plainKeyPath.MatchString(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// roundTimeoutRange says what a round timeout key accepts: 0 switches a
// timeout off, but a grace of 0 only makes the hard timeout the soft one.
func roundTimeoutRange(key string) string {
	if key == "round_timeout_grace_seconds" {
		return fmt.Sprintf("use 0 (the hard timeout is the soft one) to %d seconds", maxTimeoutSeconds)
	}
	return fmt.Sprintf("use 0 (no round timeout) to %d seconds", maxTimeoutSeconds)
}

// reservedName reports whether id is a Windows device name, with or
// without an extension: a folder of that name cannot exist there.
func reservedName(id string) bool {
	base, _, _ := strings.Cut(strings.ToUpper(id), ".")
	switch base {
	case "CON", "PRN", "AUX", "NUL":
		return true
	}
	return len(base) == 4 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) && base[3] >= '0' && base[3] <= '9'
}

// CheckTeam holds a team given as ids alone (step mode's --agents) to the
// config's rules for agent ids: each a valid id that is not a device name,
// no two differing only in case, at most MaxAgents.
func CheckTeam(ids []string) error {
	if len(ids) > MaxAgents {
		return fmt.Errorf("%d agents, at most %d are allowed in one session", len(ids), MaxAgents)
	}
	first := map[string]string{}
	for _, id := range ids {
		switch {
		case len(id) > maxIDLength || !idPattern.MatchString(id):
			return fmt.Errorf("%q is not a valid id; use 1-%d letters, digits, '.', '_' and '-', starting with a letter or digit", id, maxIDLength)
		case reservedName(id):
			return fmt.Errorf("%q is a device name on Windows (CON, PRN, AUX, NUL, COM1-9, LPT1-9), which cannot name a folder there; choose another id", id)
		}
		folded := strings.ToLower(id)
		if other, dup := first[folded]; dup && other != id {
			return fmt.Errorf("%q differs from %q only in case; ids must differ in more than case, because they name folders", id, other)
		}
		first[folded] = id
	}
	return nil
}

// Package checklist holds the pure rules of seed 001's checklist policy
// layer (voting_sensitivity: checklist_gated): the criteria an agent scores,
// the submit_checklist contract (accepted with a verdict, or a validation
// error that asks for a resubmission), and the round evaluator's handoff
// (critique_packet.md and next_tasks.json). It does no I/O: the round engine
// keeps its state in the step's checkpoint and stores what it decides.
package checklist

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Score bounds: every criterion is scored from MinScore to MaxScore, and a
// criterion passes at PassScore or above. An answer that passes every
// criterion is good enough to end on (vote or stop); anything less means
// another iteration.
const (
	MinScore  = 0
	MaxScore  = 10
	PassScore = 7
)

// Verdicts of an accepted checklist.
const (
	VerdictVote    = "vote"    // voting mode: the best answer is good enough
	VerdictStop    = "stop"    // decomposition mode: the agent's own work is done
	VerdictIterate = "iterate" // improve: propose_improvements, then new_answer
)

// Statuses of a checklist result (seed 001, "checklist result contract").
const (
	StatusAccepted        = "accepted"
	StatusValidationError = "validation_error"
)

// Criterion is one thing an answer is scored on. ID is what the model
// writes in its scores (E1, E2, …), Text what it is shown.
type Criterion struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// Numbered gives criteria the ids E1..En in order.
func Numbered(texts []string) []Criterion {
	out := make([]Criterion, len(texts))
	for i, t := range texts {
		out[i] = Criterion{ID: "E" + strconv.Itoa(i+1), Text: t}
	}
	return out
}

// The default presets, used when a session has no eval_criteria: one for
// agents competing on whole answers, one for agents owning a part of the
// task (decomposition mode scores the agent's own current work).
var (
	votingPreset = []string{
		"The answer fully and directly addresses every requirement of the ORIGINAL MESSAGE.",
		"Every claim, figure and piece of code in it is correct, and was checked where it could be.",
		"It is complete: nothing the reader needs is missing, deferred or left as a placeholder.",
		"It is clear and well organised, and no longer than it needs to be.",
	}
	decompositionPreset = []string{
		"Your subtask's requirements are fully met by your current work.",
		"Your work is correct, and was checked where it could be.",
		"It fits the other agents' parts: no gaps, overlaps or mismatched interfaces.",
		"Whoever assembles the parts can use yours without asking you anything.",
	}
)

// Criteria are what a checklist scores: the session's evaluation criteria
// when it has any, else the preset of the mode.
func Criteria(evalCriteria []string, decomposition bool) []Criterion {
	if len(evalCriteria) > 0 {
		return Numbered(evalCriteria)
	}
	if decomposition {
		return Numbered(decompositionPreset)
	}
	return Numbered(votingPreset)
}

// Request is what a submit_checklist call is checked against.
type Request struct {
	Criteria []Criterion
	// Labels are the answers to score in voting mode (agent1.2, …); empty
	// means flat scores of the agent's own current work (decomposition, or
	// voting with nothing in context).
	Labels []string
	// Decomposition makes the terminal verdict stop instead of vote.
	Decomposition bool
	// Prior are the scores of an earlier accepted checklist this step, by
	// label; a delta recheck scores only the labels not in it (or newer).
	Prior map[string]map[string]int
}

// Result is the submit_checklist result the model reads (JSON), and what
// the step keeps. An accepted result has a Verdict; a validation error has
// RequiresResubmission and Errors, never a Verdict.
type Result struct {
	Status  string                    `json:"status"`
	Verdict string                    `json:"verdict,omitempty"`
	Scores  map[string]map[string]int `json:"scores,omitempty"`
	Flat    map[string]int            `json:"flat_scores,omitempty"`
	Best    string                    `json:"best,omitempty"`
	Failing []string                  `json:"failing,omitempty"`
	// FailingCriteria are the ids of the criteria in Failing, once each.
	FailingCriteria      []string `json:"failing_criteria,omitempty"`
	RequiresResubmission bool     `json:"requires_resubmission,omitempty"`
	Errors               []string `json:"errors,omitempty"`
	Next                 string   `json:"next"`
}

// JSON is the result as the model sees it.
func (r Result) JSON() string {
	data, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings, ints and maps of them always encode
	}
	return string(data)
}

// Evaluate checks a submit_checklist payload against the request and, when
// it is complete and in range, decides the verdict. Voting mode: the best
// answer is the one with the highest total (ties to the lower label); the
// verdict is vote when it passes every criterion, else iterate.
// Decomposition or flat scoring: stop (or vote) when the agent's work
// passes every criterion, else iterate. Every problem is listed at once, so
// one resubmission can fix them all.
func Evaluate(req Request, payload string) Result {
	var raw struct {
		Scores     json.RawMessage `json:"scores"`
		ReportPath string          `json:"report_path"`
	}
	dec := json.NewDecoder(strings.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil || len(raw.Scores) == 0 || dec.More() {
		return invalid(req, []string{`the arguments must be a JSON object with a "scores" field (and optionally "report_path"), nothing else`})
	}
	if len(req.Labels) == 0 {
		return evaluateFlat(req, raw.Scores)
	}
	return evaluateLabels(req, raw.Scores)
}

func evaluateFlat(req Request, data json.RawMessage) Result {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(data, &in); err != nil {
		return invalid(req, []string{`"scores" must be an object of criterion id to score, e.g. {"E1": 8}`})
	}
	scores, errs := scoreSet(req.Criteria, in, "")
	if len(errs) > 0 {
		return invalid(req, errs)
	}
	res := Result{Status: StatusAccepted, Flat: scores}
	res.Failing, res.FailingCriteria = failing(req.Criteria, scores, "")
	res.Verdict = VerdictIterate
	if len(res.Failing) == 0 {
		res.Verdict = terminal(req)
	}
	res.Next = next(res)
	return res
}

func evaluateLabels(req Request, data json.RawMessage) Result {
	var in map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &in); err != nil {
		return invalid(req, []string{`"scores" must be an object of answer label to an object of criterion id to score, e.g. {"agent1.1": {"E1": 8}}`})
	}
	var errs []string
	all := map[string]map[string]int{}
	for label, s := range req.Prior {
		if slices.Contains(req.Labels, label) {
			all[label] = s
		}
	}
	for _, label := range sortedKeys(in) {
		if !slices.Contains(req.Labels, label) {
			errs = append(errs, fmt.Sprintf("%q is not an answer in your context; score only %s", label, strings.Join(req.Labels, ", ")))
			continue
		}
		s, e := scoreSet(req.Criteria, in[label], label)
		errs = append(errs, e...)
		all[label] = s
	}
	for _, label := range req.Labels {
		if _, ok := all[label]; !ok {
			errs = append(errs, fmt.Sprintf("answer %s is not scored", label))
		}
	}
	if len(errs) > 0 {
		return invalid(req, errs)
	}
	res := Result{Status: StatusAccepted, Scores: all}
	best, top := "", -1
	for _, label := range sortedLabels(req.Labels) {
		if t := total(all[label]); t > top {
			best, top = label, t
		}
	}
	res.Best = best
	res.Failing, res.FailingCriteria = failing(req.Criteria, all[best], best)
	res.Verdict = VerdictIterate
	if len(res.Failing) == 0 {
		res.Verdict = terminal(req)
	}
	res.Next = next(res)
	return res
}

// scoreSet reads one set of criterion scores: every criterion exactly once,
// each a whole number in range (a bare number, or {"score": n, …}).
func scoreSet(criteria []Criterion, in map[string]json.RawMessage, label string) (map[string]int, []string) {
	where := ""
	if label != "" {
		where = label + ": "
	}
	out := map[string]int{}
	var errs []string
	ids := make([]string, len(criteria))
	for i, c := range criteria {
		ids[i] = c.ID
	}
	for _, key := range sortedKeys(in) {
		id := strings.ToUpper(strings.TrimSpace(key))
		if !slices.Contains(ids, id) {
			errs = append(errs, fmt.Sprintf("%s%q is not a criterion; the criteria are %s", where, key, strings.Join(ids, ", ")))
			continue
		}
		if _, dup := out[id]; dup {
			errs = append(errs, fmt.Sprintf("%s%s is scored twice", where, id))
			continue
		}
		n, ok := parseScore(in[key])
		if !ok {
			errs = append(errs, fmt.Sprintf("%s%s must be a whole number from %d to %d", where, id, MinScore, MaxScore))
			continue
		}
		out[id] = n
	}
	for _, id := range ids {
		if _, ok := out[id]; !ok && !hasErrorFor(errs, where+id) {
			errs = append(errs, fmt.Sprintf("%s%s is not scored", where, id))
		}
	}
	return out, errs
}

func hasErrorFor(errs []string, prefix string) bool {
	for _, e := range errs {
		if strings.HasPrefix(e, prefix+" ") {
			return true
		}
	}
	return false
}

func parseScore(raw json.RawMessage) (int, bool) {
	if t := strings.TrimSpace(string(raw)); t != "" && t[0] == '"' {
		return 0, false // a number, not a string that spells one
	}
	var obj struct {
		Score *json.Number `json:"score"`
	}
	var num json.Number
	switch {
	case json.Unmarshal(raw, &num) == nil:
	case json.Unmarshal(raw, &obj) == nil && obj.Score != nil:
		num = *obj.Score
	default:
		return 0, false
	}
	n, err := strconv.Atoi(num.String())
	if err != nil || n < MinScore || n > MaxScore {
		return 0, false
	}
	return n, true
}

// failing lists "label E2 (5)" for every criterion below PassScore, and
// the ids of those criteria.
func failing(criteria []Criterion, scores map[string]int, label string) (items, ids []string) {
	for _, c := range criteria {
		if s := scores[c.ID]; s < PassScore {
			item := fmt.Sprintf("%s (%d)", c.ID, s)
			if label != "" {
				item = label + " " + item
			}
			items, ids = append(items, item), append(ids, c.ID)
		}
	}
	return items, ids
}

func terminal(req Request) string {
	if req.Decomposition {
		return VerdictStop
	}
	return VerdictVote
}

// maxErrors bounds the problems a validation error lists: a payload with
// thousands of bogus labels must not flood the model's context.
const maxErrors = 20

// Invalid is the validation error of a submission refused before its
// scores were read (its arguments were over the size limit of a tool
// call), in the shape Evaluate answers every invalid one with.
func Invalid(req Request, problem string) Result { return invalid(req, []string{problem}) }

func invalid(req Request, errs []string) Result {
	if len(errs) > maxErrors {
		errs = append(errs[:maxErrors:maxErrors], fmt.Sprintf("… and %d more problems", len(errs)-maxErrors))
	}
	return Result{Status: StatusValidationError, RequiresResubmission: true, Errors: errs,
		Next: "fix the problems listed in errors and call submit_checklist again"}
}

func next(r Result) string {
	switch r.Verdict {
	case VerdictVote:
		return "the best answer (" + r.Best + ") passes every criterion: call vote"
	case VerdictStop:
		return "your work passes every criterion: call stop with status complete"
	}
	return "some criteria are below " + strconv.Itoa(PassScore) + ": call propose_improvements with your plan, then implement it and call new_answer"
}

func total(s map[string]int) int {
	t := 0
	for _, v := range s {
		t += v
	}
	return t
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sortedLabels orders labels agent1.1 < agent2.1 < agent10.1, so a tie goes
// to the lower agent number whatever their spelling.
func sortedLabels(labels []string) []string {
	out := slices.Clone(labels)
	sort.SliceStable(out, func(i, j int) bool {
		ai, ri := splitLabel(out[i])
		aj, rj := splitLabel(out[j])
		if ai != aj {
			return ai < aj
		}
		return ri < rj
	})
	return out
}

func splitLabel(l string) (agent, rev int) {
	a, r, _ := strings.Cut(strings.TrimPrefix(l, "agent"), ".")
	agent, _ = strconv.Atoi(a)
	rev, _ = strconv.Atoi(r)
	return agent, rev
}

package tools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/engine/checklist"
)

// Names of the checklist tools of voting_sensitivity: checklist_gated (seed
// 001, "Checklist Policy Layer"). They are not workflow tools: a checklist
// result is answered and the agent goes on to vote, stop or improve.
const (
	SubmitChecklist     = "submit_checklist"
	ProposeImprovements = "propose_improvements"
)

// ChecklistSpec is submit_checklist for the given criteria. With labels
// (voting mode, answers in context) the scores are per answer label, each
// scoring every criterion; without, flat scores of the agent's own current
// work. The schema spells out every label and criterion, so a model with
// schema enforcement cannot leave one out.
func ChecklistSpec(criteria []checklist.Criterion, labels []string) Spec {
	score := func(c checklist.Criterion) map[string]any {
		return map[string]any{"type": "integer", "minimum": checklist.MinScore, "maximum": checklist.MaxScore,
			"description": c.Text}
	}
	set := map[string]any{}
	ids := make([]string, len(criteria))
	for i, c := range criteria {
		set[c.ID], ids[i] = score(c), c.ID
	}
	scores := objectSchema(set, ids...)
	what := "your own current work"
	if len(labels) > 0 {
		per := map[string]any{}
		for _, l := range labels {
			per[l] = objectSchema(set, ids...)
		}
		scores = objectSchema(per, labels...)
		what = "every answer in your context (" + strings.Join(labels, ", ") + ")"
	}
	scores["description"] = fmt.Sprintf("Scores from %d to %d of %s on each criterion; %d or more passes.",
		checklist.MinScore, checklist.MaxScore, what, checklist.PassScore)
	return Spec{
		Name: SubmitChecklist,
		Description: "Score " + what + " against the evaluation criteria before you end your turn. " +
			"The result says whether to end (verdict vote or stop) or to improve (verdict iterate); " +
			"a validation_error result lists what to fix before you submit again.",
		Parameters: objectSchema(map[string]any{
			"scores":      scores,
			"report_path": stringProp("Optional: a workspace file with your evidence, or the critique packet you based the scores on."),
		}, "scores"),
	}
}

// ProposeImprovementsSpec is propose_improvements: the plan that follows an
// accepted iterate verdict, one improvement per failing criterion.
func ProposeImprovementsSpec() Spec {
	item := objectSchema(map[string]any{
		"criterion": stringProp("The criterion id this improvement addresses, e.g. E2."),
		"change":    stringProp("What you will change, concretely."),
	}, "criterion", "change")
	return Spec{
		Name: ProposeImprovements,
		Description: "After a checklist with verdict iterate: say how you will fix every failing criterion. " +
			"Then implement the plan and submit it with new_answer.",
		Parameters: objectSchema(map[string]any{
			"improvements": map[string]any{"type": "array", "items": item, "minItems": 1},
		}, "improvements"),
	}
}

// Improvement is one planned change.
type Improvement struct {
	Criterion string `json:"criterion"`
	Change    string `json:"change"`
}

// ParseProposeImprovements validates propose_improvements arguments: at
// least one improvement, each naming a criterion and a non-empty change.
// Whether they cover the failing criteria is the policy's to check.
func ParseProposeImprovements(args string) ([]Improvement, error) {
	if err := CheckOmitted(ProposeImprovements, args); err != nil {
		return nil, err
	}
	fail := func(what string) error {
		return fmt.Errorf("%s: %s; call %s again with arguments {\"improvements\": [{\"criterion\": \"E1\", \"change\": \"<string>\"}]}",
			ProposeImprovements, what, ProposeImprovements)
	}
	if len(args) > maxArgsBytes {
		return nil, fail(fmt.Sprintf("the arguments are over the %d-byte limit", maxArgsBytes))
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	var in struct {
		Improvements []Improvement `json:"improvements"`
	}
	if err := dec.Decode(&in); err != nil {
		return nil, fail("the arguments are not an object with an \"improvements\" list")
	}
	if len(in.Improvements) == 0 {
		return nil, fail("the list of improvements is empty")
	}
	for i, im := range in.Improvements {
		if strings.TrimSpace(im.Criterion) == "" || strings.TrimSpace(im.Change) == "" {
			return nil, fail(fmt.Sprintf("improvement %d needs both a criterion and a change", i+1))
		}
		in.Improvements[i].Criterion = strings.ToUpper(strings.TrimSpace(im.Criterion))
	}
	return in.Improvements, nil
}

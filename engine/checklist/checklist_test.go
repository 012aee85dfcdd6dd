package checklist

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestEvaluateVotingMode(t *testing.T) {
	crit := Numbered([]string{"correct", "complete"})
	req := Request{Criteria: crit, Labels: []string{"agent1.1", "agent2.1"}}
	cases := []struct {
		name, payload string
		status        string
		verdict, best string
		errs          []string // substrings expected among the errors
	}{
		{name: "best passes: vote", payload: `{"scores":{"agent1.1":{"E1":6,"E2":7},"agent2.1":{"E1":9,"E2":8}}}`,
			status: StatusAccepted, verdict: VerdictVote, best: "agent2.1"},
		{name: "best fails a criterion: iterate", payload: `{"scores":{"agent1.1":{"E1":6,"E2":5},"agent2.1":{"E1":9,"E2":6}}}`,
			status: StatusAccepted, verdict: VerdictIterate, best: "agent2.1"},
		{name: "a tie goes to the lower label", payload: `{"scores":{"agent1.1":{"E1":8,"E2":8},"agent2.1":{"E1":8,"E2":8}}}`,
			status: StatusAccepted, verdict: VerdictVote, best: "agent1.1"},
		{name: "score objects and lower-case ids", payload: `{"scores":{"agent1.1":{"e1":{"score":8,"reason":"x"},"E2":8},"agent2.1":{"E1":1,"E2":1}}}`,
			status: StatusAccepted, verdict: VerdictVote, best: "agent1.1"},
		{name: "an answer not scored", payload: `{"scores":{"agent1.1":{"E1":8,"E2":8}}}`,
			status: StatusValidationError, errs: []string{"answer agent2.1 is not scored"}},
		{name: "an unknown label", payload: `{"scores":{"agent1.1":{"E1":8,"E2":8},"agent2.1":{"E1":8,"E2":8},"agent3.1":{"E1":1,"E2":1}}}`,
			status: StatusValidationError, errs: []string{`"agent3.1" is not an answer in your context`}},
		{name: "out of range and missing criterion", payload: `{"scores":{"agent1.1":{"E1":11},"agent2.1":{"E1":8,"E2":8}}}`,
			status: StatusValidationError, errs: []string{"agent1.1: E1 must be a whole number", "agent1.1: E2 is not scored"}},
		{name: "a fraction", payload: `{"scores":{"agent1.1":{"E1":7.5,"E2":8},"agent2.1":{"E1":8,"E2":8}}}`,
			status: StatusValidationError, errs: []string{"agent1.1: E1 must be a whole number"}},
		{name: "an unknown criterion", payload: `{"scores":{"agent1.1":{"E1":8,"E2":8,"E9":3},"agent2.1":{"E1":8,"E2":8}}}`,
			status: StatusValidationError, errs: []string{`"E9" is not a criterion`}},
		{name: "flat scores where labels are expected", payload: `{"scores":{"E1":8,"E2":8}}`,
			status: StatusValidationError, errs: []string{`"scores" must be an object of answer label`}},
		{name: "not JSON", payload: `scores: 8`, status: StatusValidationError, errs: []string{`"scores" field`}},
		{name: "no scores", payload: `{}`, status: StatusValidationError, errs: []string{`"scores" field`}},
		{name: "a criterion twice in two spellings", payload: `{"scores":{"agent1.1":{"E1":9,"e1":2,"E2":8},"agent2.1":{"E1":8,"E2":8}}}`,
			status: StatusValidationError, errs: []string{"agent1.1: E1 is scored twice"}},
		{name: "a score spelled as a string", payload: `{"scores":{"agent1.1":{"E1":"8","E2":8},"agent2.1":{"E1":8,"E2":8}}}`,
			status: StatusValidationError, errs: []string{"agent1.1: E1 must be a whole number"}},
		{name: "a verdict of its own", payload: `{"scores":{"agent1.1":{"E1":8,"E2":8},"agent2.1":{"E1":8,"E2":8}},"verdict":"vote"}`,
			status: StatusValidationError, errs: []string{"nothing else"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(req, c.payload)
			if r.Status != c.status || r.Verdict != c.verdict || r.Best != c.best {
				t.Fatalf("got status %q verdict %q best %q (%v), want %q %q %q", r.Status, r.Verdict, r.Best, r.Errors, c.status, c.verdict, c.best)
			}
			if c.status == StatusValidationError {
				if !r.RequiresResubmission || r.Verdict != "" || r.Scores != nil {
					t.Fatalf("a validation error must ask for a resubmission and carry no verdict or scores: %+v", r)
				}
			}
			for _, want := range c.errs {
				if !slices.ContainsFunc(r.Errors, func(e string) bool { return strings.Contains(e, want) }) {
					t.Errorf("errors %q lack %q", r.Errors, want)
				}
			}
			var back map[string]any
			if err := json.Unmarshal([]byte(r.JSON()), &back); err != nil || back["status"] != c.status {
				t.Fatalf("result JSON %s does not round-trip: %v", r.JSON(), err)
			}
		})
	}
}

func TestEvaluateFlatAndDecomposition(t *testing.T) {
	crit := Numbered([]string{"a", "b"})
	dec := Request{Criteria: crit, Decomposition: true}
	if r := Evaluate(dec, `{"scores":{"E1":9,"E2":7}}`); r.Verdict != VerdictStop || r.Flat["E2"] != 7 {
		t.Fatalf("passing decomposition work must stop: %+v", r)
	}
	r := Evaluate(dec, `{"scores":{"E1":9,"E2":6}}`)
	if r.Verdict != VerdictIterate || !slices.Equal(r.Failing, []string{"E2 (6)"}) {
		t.Fatalf("failing work must iterate naming E2: %+v", r)
	}
	if r := Evaluate(Request{Criteria: crit}, `{"scores":{"E1":9,"E2":9}}`); r.Verdict != VerdictVote {
		t.Fatalf("flat voting-mode scores that pass give vote: %+v", r)
	}
	if r := Evaluate(dec, `{"scores":{"agent1.1":{"E1":9}}}`); r.Status != StatusValidationError {
		t.Fatalf("per-label scores are refused where flat ones are expected: %+v", r)
	}
}

// A delta recheck scores only the labels that arrived after an accepted
// checklist; the earlier scores stand for the rest.
func TestEvaluateDeltaRecheck(t *testing.T) {
	crit := Numbered([]string{"a"})
	req := Request{Criteria: crit, Labels: []string{"agent1.1", "agent2.2"},
		Prior: map[string]map[string]int{"agent1.1": {"E1": 8}, "agent2.1": {"E1": 9}}}
	r := Evaluate(req, `{"scores":{"agent2.2":{"E1":6}}}`)
	if r.Status != StatusAccepted || r.Best != "agent1.1" || r.Verdict != VerdictVote {
		t.Fatalf("delta recheck: %+v", r)
	}
	if _, stale := r.Scores["agent2.1"]; stale {
		t.Fatalf("a superseded label's prior score must not count: %+v", r.Scores)
	}
	if r := Evaluate(req, `{"scores":{"agent1.1":{"E1":8}}}`); r.Status != StatusValidationError {
		t.Fatalf("the new label must be scored: %+v", r)
	}
}

func TestCriteriaPresets(t *testing.T) {
	if c := Criteria([]string{"x", "y"}, false); len(c) != 2 || c[1].ID != "E2" || c[1].Text != "y" {
		t.Fatalf("eval criteria are numbered E1..: %+v", c)
	}
	v, d := Criteria(nil, false), Criteria(nil, true)
	if len(v) == 0 || len(d) == 0 || v[0].Text == d[0].Text {
		t.Fatalf("each mode has its own preset: %+v / %+v", v, d)
	}
}

// Thousands of bogus labels get a bounded list of problems.
func TestEvaluateBoundsItsErrors(t *testing.T) {
	scores := map[string]map[string]int{}
	for i := range 5000 {
		scores[fmt.Sprintf("agent%d.1", i+9)] = map[string]int{"E1": 1}
	}
	data, _ := json.Marshal(map[string]any{"scores": scores})
	r := Evaluate(Request{Criteria: Numbered([]string{"a"}), Labels: []string{"agent1.1"}}, string(data))
	if r.Status != StatusValidationError || len(r.Errors) != maxErrors+1 || !strings.Contains(r.Errors[maxErrors], "more problems") || len(r.JSON()) > 8<<10 {
		t.Fatalf("got %d errors, %d bytes: %v", len(r.Errors), len(r.JSON()), r.Errors[len(r.Errors)-1])
	}
}

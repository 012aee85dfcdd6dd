package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/conclave-ai/conclave/engine/checklist"
)

func TestChecklistSpecNamesEveryLabelAndCriterion(t *testing.T) {
	crit := checklist.Numbered([]string{"a", "b"})
	spec := ChecklistSpec(crit, []string{"agent1.1", "agent2.3"})
	data, _ := json.Marshal(spec.Parameters)
	var p struct {
		Properties struct {
			Scores struct {
				Required   []string `json:"required"`
				Properties map[string]struct {
					Required []string `json:"required"`
				} `json:"properties"`
			} `json:"scores"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	s := p.Properties.Scores
	if strings.Join(s.Required, ",") != "agent1.1,agent2.3" || strings.Join(s.Properties["agent2.3"].Required, ",") != "E1,E2" {
		t.Fatalf("schema does not require every label and criterion: %s", data)
	}
	flat, _ := json.Marshal(ChecklistSpec(crit, nil).Parameters)
	if strings.Contains(string(flat), "agent") {
		t.Fatalf("flat scores name no labels: %s", flat)
	}
}

func TestParseProposeImprovements(t *testing.T) {
	got, err := ParseProposeImprovements(`{"improvements":[{"criterion":" e2 ","change":"add tests"}]}`)
	if err != nil || len(got) != 1 || got[0].Criterion != "E2" {
		t.Fatalf("got %+v, %v", got, err)
	}
	for _, bad := range []string{``, `{}`, `{"improvements":[]}`, `{"improvements":[{"criterion":"E1"}]}`,
		`{"improvements":[{"criterion":"E1","change":"x"}],"verdict":"vote"}`, `[1]`} {
		if _, err := ParseProposeImprovements(bad); err == nil || !strings.Contains(err.Error(), "call propose_improvements again") {
			t.Errorf("%q: got %v", bad, err)
		}
	}
}

package checklist

import (
	"strings"
	"testing"
)

const validTasks = `{"objective":"one thesis","tasks":[{"id":"T1","title":"fix the nav","description":"d","execution":{"mode":"inline"},"implementation_guidance":"use flexbox"}],
"approach_assessment":{"ceiling_status":"ceiling_approaching","breakthroughs":[{"element":"timeline","why":"w","apply_to":"all"}]}}`

func TestParseNextTasks(t *testing.T) {
	nt, err := ParseNextTasks([]byte(validTasks))
	if err != nil || len(nt.Plan()) != 1 || nt.Plan()[0].ImplementationGuidance != "use flexbox" {
		t.Fatalf("valid next_tasks.json: %v %+v", err, nt)
	}
	reached := `{"tasks":[{"id":"T1","title":"t","execution":{"mode":"inline"}}],
"approach_assessment":{"ceiling_status":"ceiling_reached","evolution_tasks":[{"id":"V1","title":"pivot","execution":{"mode":"delegate"}}]}}`
	nt, err = ParseNextTasks([]byte(reached))
	if err != nil || nt.Plan()[0].ID != "V1" {
		t.Fatalf("at the ceiling the evolution tasks come first: %v %+v", err, nt)
	}
	bad := []struct{ name, doc, want string }{
		{"empty", ``, "empty"},
		{"not JSON", `{"tasks":`, "not valid"},
		{"unknown field", `{"tasks":[],"verdict":"vote"}`, "unknown field"},
		{"no tasks", `{"tasks":[],"approach_assessment":{"ceiling_status":"ceiling_not_reached"}}`, "no tasks"},
		{"bad mode", `{"tasks":[{"id":"T1","title":"t","execution":{"mode":"parallel"}}],"approach_assessment":{"ceiling_status":"ceiling_not_reached"}}`, `execution.mode "parallel"`},
		{"duplicate id", `{"tasks":[{"id":"T1","title":"t","execution":{"mode":"inline"}},{"id":"T1","title":"u","execution":{"mode":"inline"}}],"approach_assessment":{"ceiling_status":"ceiling_not_reached"}}`, "used twice"},
		{"no ceiling status", `{"tasks":[{"id":"T1","title":"t","execution":{"mode":"inline"}}]}`, "ceiling_status"},
		{"data after the object", validTasks + ` {}`, "data after"},
		{"ids equal once trimmed", `{"tasks":[{"id":"T1","title":"t","execution":{"mode":"inline"}},{"id":"T1 ","title":"u","execution":{"mode":"inline"}}],"approach_assessment":{"ceiling_status":"ceiling_not_reached"}}`, "used twice"},
		{"ceiling without evolution", `{"tasks":[{"id":"T1","title":"t","execution":{"mode":"inline"}}],"approach_assessment":{"ceiling_status":"ceiling_reached"}}`, "needs evolution_tasks"},
	}
	for _, c := range bad {
		if _, err := ParseNextTasks([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}

func TestPacket(t *testing.T) {
	p := Packet{}
	for _, s := range PacketSections {
		p[s.Key] = "text of " + s.Key
	}
	if err := CheckPacket(p); err != nil {
		t.Fatal(err)
	}
	md := p.Markdown(2, func(s string) string { return "«" + s + "»" })
	last := -1
	for _, s := range PacketSections {
		i := strings.Index(md, "## "+s.Title)
		if i < last || !strings.Contains(md, "«text of "+s.Key+"»") {
			t.Fatalf("section %s missing, unquoted or out of order:\n%s", s.Key, md)
		}
		last = i
	}
	delete(p, "evidence_gaps")
	p["verdict"] = "vote"
	err := CheckPacket(p)
	if err == nil || !strings.Contains(err.Error(), "evidence_gaps is missing") || !strings.Contains(err.Error(), `"verdict" is not a section`) {
		t.Fatalf("got %v", err)
	}
}

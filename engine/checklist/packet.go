package checklist

import (
	"fmt"
	"slices"
	"strings"
)

// PacketSections are the parts of the round evaluator's critique packet, in
// order (seed 001: the packet is critique and spec guidance, never a
// checklist payload or a verdict).
var PacketSections = []struct{ Key, Title string }{
	{"criteria_interpretation", "Criteria interpretation"},
	{"criterion_findings", "Criterion findings"},
	{"cross_answer_synthesis", "Cross-answer synthesis"},
	{"preserve", "Preserve"},
	{"improvement_spec", "Improvement spec"},
	{"verification_plan", "Verification plan"},
	{"evidence_gaps", "Evidence gaps"},
}

// maxSectionBytes bounds one section: the packet is read by every agent of
// the next round.
const maxSectionBytes = 32 << 10

// Packet is a critique packet by section key.
type Packet map[string]string

// CheckPacket says what is missing or oversized in a packet; nil when every
// section is present and within bounds.
func CheckPacket(p Packet) error {
	var problems []string
	for _, s := range PacketSections {
		v := strings.TrimSpace(p[s.Key])
		switch {
		case v == "":
			problems = append(problems, s.Key+" is missing")
		case len(v) > maxSectionBytes:
			problems = append(problems, fmt.Sprintf("%s is over %d bytes", s.Key, maxSectionBytes))
		}
	}
	for k := range p {
		if !knownSection(k) {
			problems = append(problems, fmt.Sprintf("%q is not a section of the packet", k))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the critique packet is incomplete: %s", strings.Join(sortedStrings(problems), "; "))
	}
	return nil
}

func knownSection(k string) bool {
	for _, s := range PacketSections {
		if s.Key == k {
			return true
		}
	}
	return false
}

// Markdown renders critique_packet.md: one heading per section, in order.
// quote makes untrusted text safe to embed (the evaluator's own text is
// model output); the round engine passes agent.Quote.
func (p Packet) Markdown(round int, quote func(string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Critique packet (before round %d)\n", round)
	for _, s := range PacketSections {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n", s.Title, quote(strings.TrimSpace(p[s.Key])))
	}
	return b.String()
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

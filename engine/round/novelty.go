package round

import (
	"strings"
	"unicode"
)

// WordOverlap is the share of a's distinct words that also occur in b:
// words are maximal runs of letters and digits, compared case-insensitively;
// punctuation and spacing do not count. It is answer_novelty_requirement's
// measure of how much a new answer (a) repeats one in context (b): a
// rewording that adds little overlaps heavily, an answer that builds on b
// with much new material does not. An answer without words overlaps
// nothing (0).
func WordOverlap(a, b string) float64 {
	wa := words(a)
	if len(wa) == 0 {
		return 0
	}
	wb := words(b)
	shared := 0
	for w := range wa {
		if wb[w] {
			shared++
		}
	}
	return float64(shared) / float64(len(wa))
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		out[w] = true
	}
	return out
}

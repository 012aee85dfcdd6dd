package agent

import (
	"regexp"
	"strings"
)

// markerLike matches what the context uses to delimit its parts: the task,
// subtask, answers, criteria and update blocks of a coordination step, and
// the answer labels (<agent2.1>, <end of agent2.1>, <agent1.final>). It is
// lenient about case, spacing and a closing slash, because a model reads
// <End Of Agent2.1 > as the same marker; only UPDATE must be upper case, so
// that an honest <update> element in a file read back is left alone.
//
// "Space" includes invisible format characters (a zero-width space, a
// word joiner): a model skips them, so <\u200bagent2.1> reads as a marker.
var markerLike = regexp.MustCompile(strings.ReplaceAll(
	`(?i)<\s*/?\s*(?:end\s+of\b[^<>]*|agent\s*\d+(?:\s*\.\s*(?:\d+|final))?|original\s+message|current\s+answers\b[^<>]*|your\s+subtask|evaluation\s+criteria|new\s+answers|task\s+plan|critique\s+packet|checklist\s+criteria|(?-i:UPDATE))\s*>`,
	`\s`, `[\s\p{Cf}\p{Zs}]`))

// Quote neutralises untrusted text — a peer's answer, human input,
// criteria, a task assembled from earlier steps, tool output — before it is
// placed in a model's context, so it cannot forge the markers that context
// is built from: another agent's answer block, the end of the task, an
// update. Only marker-shaped sequences change, and they still read the
// same: their "<" becomes "＜" (U+FF1C). Every other text, "a < b" and
// HTML included, is returned unchanged. Every place where untrusted text
// enters a context calls this one function.
func Quote(text string) string {
	if !strings.Contains(text, "<") {
		return text
	}
	return markerLike.ReplaceAllStringFunc(text, func(m string) string { return "＜" + m[1:] })
}

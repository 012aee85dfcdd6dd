// Package runes cuts text to a byte budget without splitting a UTF-8
// sequence: every limit on text in Conclave (previews, stored summaries,
// error messages, failure reasons) is in bytes, and a cut mid-rune would
// store or show invalid UTF-8.
package runes

import "unicode/utf8"

// Mark ends text that Clip shortened.
const Mark = "…"

// Truncate cuts s to at most n bytes at a rune boundary and reports whether
// it cut anything.
func Truncate(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// Clip shortens s to at most n bytes, Mark included, at a rune boundary,
// so a reader sees that something was left out. Below len(Mark) bytes only
// the mark is left.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut, _ := Truncate(s, n-len(Mark))
	return cut + Mark
}

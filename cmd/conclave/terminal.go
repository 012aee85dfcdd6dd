package main

import (
	"strings"
	"unicode"
)

// terminalLine makes text that came from a model, a step or a stored file
// safe to print inside one of the CLI's progress lines: control characters
// (newlines, carriage returns, ANSI and OSC escape sequences) become a
// visible "␛" for ESC and a space for the rest, and runs of spaces fold to
// one. Without it an error message written by a model could print fake
// "step 2 · deploy … completed" lines or retitle the terminal.
func terminalLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == 0x1b:
			return '␛'
		case unicode.IsControl(r), r == '\u2028', r == '\u2029':
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

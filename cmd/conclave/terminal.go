package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
)

// terminalLine makes text that came from a model, a step or a stored file
// safe to print inside one of the CLI's progress lines: control characters
// (newlines, carriage returns, ANSI and OSC escape sequences, C1 controls)
// become a visible "␛" for ESC and a space for the rest, bidirectional
// overrides a space, and runs of spaces fold to one. Without it an error
// message written by a model could print fake "step 2 · deploy …
// completed" lines or retitle the terminal.
func terminalLine(s string) string {
	return strings.Join(strings.Fields(neutralise(s, false)), " ")
}

// terminalText is terminalLine for a multi-line text shown as such (a final
// answer): line breaks and tabs stay, a lone carriage return (which would
// overwrite the line before it) becomes a line break, and every other
// control character is neutralised.
func terminalText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return neutralise(strings.ReplaceAll(s, "\r", "\n"), true)
}

// textFor is the text to print on out: neutralised when out is a terminal,
// as it is when piped to a file or a program, which get the text as the
// model wrote it.
func textFor(out io.Writer, s string) string {
	if f, ok := out.(*os.File); ok && isTerminal(f) {
		return terminalText(s)
	}
	return s
}

func neutralise(s string, keepLines bool) string {
	return strings.Map(func(r rune) rune {
		switch {
		case keepLines && (r == '\n' || r == '\t'):
			return r
		case r == 0x1b:
			return '␛'
		case unicode.IsControl(r), r == '\u2028', r == '\u2029',
			r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// safeJSON escapes, inside encoded JSON, the characters encoding/json
// writes raw that a terminal acts on: DEL, the C1 controls and the
// bidirectional overrides and isolates. The JSON means the same (they can
// only occur inside strings, where \uXXXX is the same character), but a
// PROGRESS line or a status printed on a terminal cannot drive it.
func safeJSON(data []byte) []byte {
	var b bytes.Buffer
	for _, r := range string(data) {
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.Bytes()
}

// jsonOut is a writer for a json.Encoder whose output goes to a terminal
// or a program: every Write (one encoded value) passes through safeJSON.
type jsonOut struct{ w io.Writer }

func (j jsonOut) Write(p []byte) (int, error) {
	if _, err := j.w.Write(safeJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

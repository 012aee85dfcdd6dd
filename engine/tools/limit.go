package tools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/engine/runes"
)

// MaxCallBytes bounds the JSON arguments of one tool call, whatever the
// tool: new_answer's content, a write_file's content (so a file is written
// in pieces of at most this size, a little less after JSON escaping). A
// reply with a larger call is not run: the engine keeps only a placeholder
// (Omit) in the transcript, so the next request and the stored trace stay
// small instead of echoing megabytes back to the model on every turn.
const MaxCallBytes = 256 << 10

// omittedKey is the one field of a placeholder; no tool has a field of
// that name, so a placeholder never parses as real arguments.
const omittedKey = "conclave_omitted_arguments_bytes"

// Omit returns the placeholder that stands for arguments over MaxCallBytes:
// a small JSON object (servers that parse arguments on the way back accept
// it) that records only their size.
func Omit(args string) string {
	return fmt.Sprintf(`{%q:%d}`, omittedKey, len(args))
}

// Omitted reports whether args is a placeholder, and the size of the
// arguments it stands for.
func Omitted(args string) (size int, ok bool) {
	if !strings.HasPrefix(args, `{"`+omittedKey+`":`) {
		return 0, false
	}
	var v map[string]int
	if err := json.Unmarshal([]byte(args), &v); err != nil || len(v) != 1 {
		return 0, false
	}
	size, ok = v[omittedKey]
	return size, ok
}

// CheckOmitted is the error answering a call whose arguments were omitted;
// nil for any other arguments. Every tool's argument parsing asks it first.
func CheckOmitted(tool, args string) error {
	size, ok := Omitted(args)
	if !ok {
		return nil
	}
	return fmt.Errorf("%s: the arguments went over the %d-byte limit for one tool call (%d bytes were received before the reply was stopped); the call was not run and its arguments were not kept. "+
		"Call %s again with less: write a large file in several parts (several files), keep an answer under the limit", tool, MaxCallBytes, size, tool)
}

// MaxResultBytes bounds one tool result as the model receives it, whatever
// the tool: every result passes through Cap before it enters the
// transcript, so a tool that returns more (a future MCP server, a command's
// output) cannot grow the context, the checkpoint or the worker's memory
// past it. It leaves room for a whole file at DefaultMaxFileBytes.
const MaxResultBytes = DefaultMaxFileBytes + 16<<10

// Cap cuts res.Content to at most limit bytes, at a rune boundary, and says
// so at the end, so the model knows it holds only the beginning.
func Cap(res Result, limit int) Result {
	if len(res.Content) <= limit {
		return res
	}
	note := fmt.Sprintf("\n[the result was %d bytes and is cut here, at the %d-byte limit for one tool result; ask for less]", len(res.Content), limit)
	keep, _ := runes.Truncate(res.Content, limit-len(note))
	res.Content = keep + note
	return res
}

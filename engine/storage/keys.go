package storage

import (
	"fmt"
	"strings"
)

// MaxKeyLen is the longest key accepted, in bytes. S3 allows 1024 bytes per
// object key; holding local directories to the same limit keeps both
// implementations interchangeable.
const MaxKeyLen = 1024

// ValidKey reports why key cannot be used, or nil. Keys are relative,
// slash-separated paths; anything that could climb out of a store's root or
// mean different things to a filesystem and to S3 is refused, so a key that
// works against a local directory works unchanged against a bucket.
func ValidKey(key string) error {
	if key == "" {
		return fmt.Errorf("storage: invalid key %q: key is empty; name a file such as \"agents/a/001/answer.json\"", key)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("storage: invalid key %q: %d bytes is longer than the %d-byte limit; use a shorter path", key, len(key), MaxKeyLen)
	}
	if strings.HasPrefix(key, "/") {
		return fmt.Errorf("storage: invalid key %q: absolute keys are refused; drop the leading \"/\"", key)
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c == '\\':
			return fmt.Errorf("storage: invalid key %q: backslash at byte %d; separate path elements with \"/\"", key, i)
		case c < 0x20 || c == 0x7f:
			return fmt.Errorf("storage: invalid key %q: control character 0x%02x at byte %d; use printable characters only", key, c, i)
		}
	}
	for elem := range strings.SplitSeq(key, "/") {
		switch elem {
		case "":
			return fmt.Errorf("storage: invalid key %q: empty path element (\"//\" or a trailing \"/\"); name a file, not a directory", key)
		case ".", "..":
			return fmt.Errorf("storage: invalid key %q: path element %q is refused so keys cannot escape the store root; use a clean relative path", key, elem)
		}
	}
	return nil
}

// validPrefix checks a List or Sub prefix: either empty (everything) or a
// valid key followed by "/". Requiring the slash keeps "a/b/" from matching
// keys under "a/bc/", which a bare string prefix would do on S3.
func validPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("storage: invalid prefix %q: a prefix must be empty or end with \"/\"; use %q", prefix, prefix+"/")
	}
	if err := ValidKey(strings.TrimSuffix(prefix, "/")); err != nil {
		return fmt.Errorf("storage: invalid prefix %q: %w", prefix, err)
	}
	return nil
}

// dirPrefix turns "sess", "sess/" or "" into "" or "sess/" and validates it;
// it is the lenient form accepted where a caller names a sub-tree rather
// than listing one (Sub, the S3 bucket prefix).
func dirPrefix(prefix string) (string, error) {
	if prefix == "" {
		return "", nil
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return prefix, validPrefix(prefix)
}

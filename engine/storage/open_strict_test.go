package storage

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 22, item 8: s3://bucket/p/a#b?endpoint=… became session "a" with
// the endpoint dropped (signed requests went to AWS), and file:///d/a#b
// became /d/a. A fragment, or anything else that would be dropped, is an
// error naming it.
func TestOpenRefusesWhatWouldBeDropped(t *testing.T) {
	for raw, want := range map[string]string{
		"s3://bucket/p/a#b?endpoint=http://127.0.0.1:9000": `"#b?endpoint=http://127.0.0.1:9000"`,
		"file:///d/a#b": `"#b"`,
		"file:///d/a#":  "'#' fragment",
		"s3://bucket/p?endpoint=http://127.0.0.1:9000/x":        "has a path or query",
		"s3://bucket/p?endpoint=http://127.0.0.1:9000?region=x": "has a path or query",
		"s3://bucket:9000/p": "has a port after the bucket name",
	} {
		_, err := Open(context.Background(), raw)
		require.Error(t, err, raw)
		assert.Contains(t, err.Error(), want, raw)
	}
	// A '#' in a plain directory path is a name, not a fragment.
	st, err := Open(context.Background(), t.TempDir()+"/a#b")
	require.NoError(t, err)
	assert.Contains(t, st.Location(), "a#b")
}

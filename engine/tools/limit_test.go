package tools

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOmittedArgumentsAreNeverRun(t *testing.T) {
	t.Parallel()
	big := `{"path":"big.txt","content":"` + strings.Repeat("x", 3<<20) + `"}`
	p := Omit(big)
	require.Less(t, len(p), 100)
	size, ok := Omitted(p)
	require.True(t, ok)
	require.Equal(t, len(big), size)
	for _, honest := range []string{"", "{}", `{"path":"a"}`, `{"conclave_omitted_arguments_bytes":"x"}`, `{"conclave_omitted_arguments_bytes":1,"path":"a"}`} {
		_, ok := Omitted(honest)
		require.False(t, ok, honest)
	}

	dir := t.TempDir()
	res, handled := Workspace{Dir: dir}.Call(WriteFile, p)
	require.True(t, handled)
	require.True(t, res.IsError)
	require.Contains(t, res.Content, "over the 262144-byte limit for one tool call")
	list, _ := Workspace{Dir: dir}.Call(ListFiles, "")
	require.Equal(t, "(no files)\n", list.Content)
	_, err := ParseNewAnswer(p)
	require.ErrorContains(t, err, "new_answer: the arguments went over")
}

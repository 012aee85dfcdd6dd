package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// Bad bench flags fail before any server is started.
func TestBenchRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--concurrency", "1,x"}, `--concurrency: "x" is not a positive number`},
		{[]string{"bench", "--concurrency", "0"}, `--concurrency: "0" is not a positive number`},
		{[]string{"bench", "--latency", "soon"}, `invalid argument "soon" for "--latency"`},
		{[]string{"bench", "extra"}, `unknown command "extra"`},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errb)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, errb.String(), tc.want, tc.args)
	}
}

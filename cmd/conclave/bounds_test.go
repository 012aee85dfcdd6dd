package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

// Issue 22, item 1: a model whose reply never ends took step mode to
// gigabytes. The reply is stopped at the worker's limit; the model is told
// once, and a second endless reply fails the step, naming the limit.
func TestStepModeStopsAnEndlessReply(t *testing.T) {
	setStepKey(t)
	t.Setenv("CONCLAVE_MAX_REPLY_BYTES", "65536")
	srv := llmtest.Start(t, llmtest.Text(strings.Repeat("blah ", 200)).Forever())
	dir := t.TempDir()
	session := filepath.Join(dir, "session")
	code, _, errs := runCLI(t, "step", "--session-dir", session, "--config", agentConfig(t, dir, "agent_a", srv.URL()),
		"--agents", "agent_a,agent_b", "--automation", "task")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errs, "went over 65536 bytes (reply bytes limit)")
	require.Equal(t, 2, srv.Count(), "told once, then failed")
	assert.Contains(t, srv.Requests()[1].Last().Content, "Your previous reply was not received")
}

package round

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

// newModel is the real openai-go client pointed at the scripted server.
func newModel(t *testing.T, srv *llmtest.Server) llm.Model {
	t.Helper()
	m, err := llm.New(llm.Config{Model: "test-model", BaseURL: srv.URL()}, "sk-test")
	require.NoError(t, err)
	return m
}

package telemetry

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
)

// Issue 22, item 6: the model name, which sessions choose, became a
// Prometheus label of any length, and four sessions of 50 agents grew
// /metrics from 1,411 to 5,413 series. The label set is now bounded: past
// the cap every model counts as "other", and no label is long.
func TestModelLabelsAreBounded(t *testing.T) {
	tel, err := New(t.Context(), Options{Getenv: func(k string) string {
		if k == EnvMaxModelLabels {
			return "3"
		}
		return ""
	}})
	require.NoError(t, err)
	ok := fakeModel{resp: llm.Response{Usage: coord.Usage{InputTokens: 1, OutputTokens: 1}}}
	names := []string{strings.Repeat("m", 20000), "evil\x1b[2J\nname"}
	for i := range 200 {
		names = append(names, fmt.Sprintf("model-%d", i))
	}
	for _, n := range names {
		_, err := newModel(t, tel, n, false, ok).Complete(t.Context(), llm.Request{})
		require.NoError(t, err)
	}
	code, body := scrape(t, tel.Handler(&Health{}), "/metrics")
	require.Equal(t, http.StatusOK, code)
	labels := map[string]bool{}
	for _, m := range regexp.MustCompile(`conclave_model_calls_total\{model="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		labels[m[1]] = true
	}
	assert.Len(t, labels, 4, "three names and other: %v", labels)
	assert.True(t, labels["other"])
	assert.True(t, labels[strings.Repeat("m", 64)])
	for l := range labels {
		assert.LessOrEqual(t, len(l), 64)
		assert.NotContains(t, l, "\x1b")
	}
	assert.Contains(t, body, `conclave_model_calls_total{model="other",outcome="ok"} 199`)
}

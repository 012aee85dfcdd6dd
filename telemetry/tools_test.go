package telemetry

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolCallMetrics(t *testing.T) {
	tel, err := New(context.Background(), Options{Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	tel.ToolCall("mcp__weather__get_weather", false, 20*time.Millisecond)
	tel.ToolCall("mcp__weather__get_weather", true, time.Second)
	rec := httptest.NewRecorder()
	tel.Handler(&Health{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	assert.Contains(t, body, `conclave_tool_calls_total{server="weather",tool="get_weather"} 2`)
	assert.Contains(t, body, `conclave_tool_errors_total{server="weather",tool="get_weather"} 1`)
	assert.True(t, strings.Contains(body, `conclave_tool_call_duration_seconds_count{server="weather",tool="get_weather"} 2`), body[:min(len(body), 2000)])
}

package coord

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUsageJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    Usage
		json string
		cost string
	}{
		{"priced", Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.5}, `{"input_tokens":10,"output_tokens":2,"cost_usd":0.5}`, "$0.5000"},
		{"nothing used", Usage{}, `{"input_tokens":0,"output_tokens":0,"cost_usd":0}`, "$0.0000"},
		{"unpriced", Usage{InputTokens: 10, Unpriced: true}, `{"input_tokens":10,"output_tokens":0,"cost_usd":null,"unpriced":true}`, "unknown"},
		{"partly priced", Usage{InputTokens: 10, CostUSD: 0.25, Unpriced: true}, `{"input_tokens":10,"output_tokens":0,"cost_usd":0.25,"unpriced":true}`, "$0.2500 + unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(tc.u)
			require.NoError(t, err)
			require.JSONEq(t, tc.json, string(data))
			var back Usage
			require.NoError(t, json.Unmarshal(data, &back))
			require.Equal(t, tc.u, back)
			require.Equal(t, tc.cost, tc.u.Cost())
		})
	}
	// A bare null cost (no "unpriced") still reads as unknown.
	var u Usage
	require.NoError(t, json.Unmarshal([]byte(`{"input_tokens":3,"cost_usd":null}`), &u))
	require.True(t, u.CostUnknown())
	// Sums keep the mark.
	require.True(t, Usage{CostUSD: 1}.Add(Usage{Unpriced: true}).Unpriced)
}

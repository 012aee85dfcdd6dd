package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const oneAgent = "agent:\n  id: a\n  backend: {model: m}\n"

// answer_novelty_requirement and the round timeouts are settings, in
// orchestrator and (timeouts) in MassGen's timeout_settings, validated.
func TestRoundSettings(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string
		check   func(t *testing.T, o Orchestrator)
	}{
		{name: "defaults", check: func(t *testing.T, o Orchestrator) {
			assert.Equal(t, NoveltyLenient, o.AnswerNoveltyRequirement)
			soft, grace := o.RoundTimeout(true)
			assert.Zero(t, soft)
			assert.Zero(t, grace)
		}},
		{name: "novelty strict", yaml: "orchestrator: {answer_novelty_requirement: strict}\n", check: func(t *testing.T, o Orchestrator) {
			assert.Equal(t, NoveltyStrict, o.AnswerNoveltyRequirement)
		}},
		{name: "novelty nested", yaml: "orchestrator: {coordination: {answer_novelty_requirement: balanced}}\n", check: func(t *testing.T, o Orchestrator) {
			assert.Equal(t, NoveltyBalanced, o.AnswerNoveltyRequirement)
		}},
		{name: "novelty unknown", yaml: "orchestrator: {answer_novelty_requirement: loose}\n",
			wantErr: `orchestrator.answer_novelty_requirement: "loose" is not one of: lenient, balanced, strict`},
		{name: "timeout_settings", yaml: "timeout_settings: {initial_round_timeout_seconds: 90.5, subsequent_round_timeout_seconds: 60, round_timeout_grace_seconds: 30}\n",
			check: func(t *testing.T, o Orchestrator) {
				assert.Equal(t, 91, o.InitialRoundTimeoutSeconds, "a fraction is rounded up")
				soft, grace := o.RoundTimeout(true)
				assert.Equal(t, 91*time.Second, soft)
				assert.Equal(t, 30*time.Second, grace)
				soft, grace = o.RoundTimeout(false)
				assert.Equal(t, 60*time.Second, soft)
				assert.Equal(t, 30*time.Second, grace)
			}},
		{name: "orchestrator.timeout", yaml: "orchestrator: {timeout: {subsequent_round_timeout_seconds: 45}}\n", check: func(t *testing.T, o Orchestrator) {
			soft, _ := o.RoundTimeout(true)
			assert.Zero(t, soft, "no initial timeout: the first step has none")
			soft, _ = o.RoundTimeout(false)
			assert.Equal(t, 45*time.Second, soft)
		}},
		{name: "flat orchestrator key", yaml: "orchestrator: {initial_round_timeout_seconds: 10}\n", check: func(t *testing.T, o Orchestrator) {
			assert.Equal(t, 10, o.InitialRoundTimeoutSeconds)
		}},
		{name: "negative in timeout_settings", yaml: "timeout_settings: {round_timeout_grace_seconds: -1}\n",
			wantErr: "timeout_settings.round_timeout_grace_seconds: -1 is out of range; use 0 (the hard timeout is the soft one)"},
		{name: "negative in orchestrator", yaml: "orchestrator: {subsequent_round_timeout_seconds: -5}\n",
			wantErr: "orchestrator.subsequent_round_timeout_seconds: -5 is out of range; use 0 (no round timeout)"},
		{name: "set twice", yaml: "orchestrator: {initial_round_timeout_seconds: 10}\ntimeout_settings: {initial_round_timeout_seconds: 20}\n",
			wantErr: "initial_round_timeout_seconds is also set"},
		{name: "not a number", yaml: "timeout_settings: {initial_round_timeout_seconds: soon}\n",
			wantErr: "timeout_settings.initial_round_timeout_seconds: expected a number of seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warnings, err := ParseWithWarnings([]byte(oneAgent+tt.yaml), "c.yaml")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Empty(t, warnings, "an honoured setting is not reported")
			tt.check(t, c.Orchestrator)
			requireJSONRoundTrip(t, c)
		})
	}
}

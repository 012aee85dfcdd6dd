package activities

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/engine/coord"
)

func TestWithUsageKeepsTheErrorAndCarriesTheUsage(t *testing.T) {
	u := coord.Usage{InputTokens: 12, OutputTokens: 3, CostUSD: 0.25}
	plain := errors.New("boom")
	require.Same(t, plain, withUsage(plain, coord.Usage{}), "no usage: the error is untouched")

	busy := temporal.NewApplicationErrorWithOptions("rate limited", "ModelUnavailable",
		temporal.ApplicationErrorOptions{NextRetryDelay: 7 * time.Second})
	for _, in := range []error{plain, busy, temporal.NewNonRetryableApplicationError("gone", "ModelRejected", nil)} {
		var got, want *temporal.ApplicationError
		require.ErrorAs(t, withUsage(in, u), &got)
		var carried coord.Usage
		require.NoError(t, got.Details(&carried))
		require.Equal(t, coord.Usage(u), carried)
		if errors.As(in, &want) {
			require.Equal(t, want.Type(), got.Type())
			require.Equal(t, want.NonRetryable(), got.NonRetryable())
			require.Equal(t, want.NextRetryDelay(), got.NextRetryDelay())
			require.Equal(t, want.Message(), got.Message())
		} else {
			require.False(t, got.NonRetryable(), "storage trouble stays retryable")
		}
	}
}

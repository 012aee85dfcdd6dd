package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// yaml.v3 panics on a merge key whose value holds a mapping as a key; the
// fuzzer found it. Parse must report it instead.
func TestMalformedMergeKeyIsAnError(t *testing.T) {
	_, err := Parse([]byte("orchestrator: {<<, {000000}}"), "c.yaml")
	require.ErrorContains(t, err, "c.yaml")
	require.ErrorContains(t, err, "merge keys")
}

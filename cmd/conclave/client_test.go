package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// parseTemporalFlags registers the connection flags on a throwaway command
// and parses args, as cobra would for a real one.
func parseTemporalFlags(t *testing.T, args ...string) *temporalFlags {
	t.Helper()
	var f temporalFlags
	cmd := &cobra.Command{Use: "x"}
	f.add(cmd)
	require.NoError(t, cmd.ParseFlags(args))
	return &f
}

// clearTemporalEnv unsets every TEMPORAL_* variable for the test.
func clearTemporalEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TEMPORAL_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	t.Setenv("TEMPORAL_CONFIG_FILE", os.DevNull)
}

func TestTemporalOptionsPrecedence(t *testing.T) {
	clearTemporalEnv(t)
	toml := filepath.Join(t.TempDir(), "temporal.toml")
	require.NoError(t, os.WriteFile(toml, []byte(`
[profile.default]
address = "file-default:7233"
[profile.prod]
address = "file-prod:7233"
namespace = "prod-ns"
api_key = "from-file"
`), 0o600))

	t.Run("defaults", func(t *testing.T) {
		f := parseTemporalFlags(t)
		o, err := f.options()
		require.NoError(t, err)
		require.Equal(t, defaultAddress, o.HostPort)
		require.Equal(t, defaultNamespace, o.Namespace)
		require.False(t, usesTLS(o))
	})
	t.Run("profile, then env, then flags", func(t *testing.T) {
		t.Setenv("TEMPORAL_CONFIG_FILE", toml)
		t.Setenv("TEMPORAL_PROFILE", "prod")
		o, err := parseTemporalFlags(t).options()
		require.NoError(t, err)
		require.Equal(t, "file-prod:7233", o.HostPort)
		require.Equal(t, "prod-ns", o.Namespace)
		require.True(t, usesTLS(o), "an API key implies TLS")
		require.NotNil(t, o.Credentials)

		t.Setenv("TEMPORAL_ADDRESS", "env:7233")
		f := parseTemporalFlags(t, "--namespace", "flag-ns")
		o, err = f.options()
		require.NoError(t, err)
		require.Equal(t, "env:7233", o.HostPort)
		require.Equal(t, "flag-ns", o.Namespace)
		require.Equal(t, "env:7233", f.address, "the resolved address is kept for messages")
	})
	t.Run("TEMPORAL_TLS=true", func(t *testing.T) {
		t.Setenv("TEMPORAL_TLS", "true")
		o, err := parseTemporalFlags(t).options()
		require.NoError(t, err)
		require.True(t, usesTLS(o))
	})
	t.Run("a tls flag implies TLS", func(t *testing.T) {
		o, err := parseTemporalFlags(t, "--tls-server-name", "temporal.internal").options()
		require.NoError(t, err)
		require.True(t, usesTLS(o))
		require.Equal(t, "temporal.internal", o.ConnectionOptions.TLS.ServerName)
	})
	t.Run("no plaintext with a key", func(t *testing.T) {
		t.Setenv("TEMPORAL_API_KEY", "secret-key")
		_, err := parseTemporalFlags(t, "--tls=false").options()
		require.ErrorContains(t, err, "never sent in plaintext")
		require.NotContains(t, err.Error(), "secret-key")
	})
	t.Run("missing config file", func(t *testing.T) {
		_, err := parseTemporalFlags(t, "--config-file", filepath.Join(t.TempDir(), "nope.toml")).options()
		require.ErrorContains(t, err, "--config-file")
	})
	t.Run("missing profile", func(t *testing.T) {
		_, err := parseTemporalFlags(t, "--config-file", toml, "--profile", "staging").options()
		require.ErrorContains(t, err, "staging")
	})
}

func TestErrorText(t *testing.T) {
	wall := "session x failed: workflow execution error: activity error: model m: 404 Not Found: model m: 404 Not Found"
	got := errorText(errString(wall), false)
	require.Equal(t, 1, strings.Count(got, "404 Not Found"), got)
	require.Contains(t, got, "--verbose")
	require.Equal(t, wall, errorText(errString(wall), true))
	long := errorText(errString(strings.Repeat("x", 2000)), false)
	require.Less(t, len(long), maxErrorLen+40)
}

type errString string

func (e errString) Error() string { return string(e) }

// A TEMPORAL_TLS value that is not a boolean is refused: the standard
// loader would read it as false and dial in plaintext without a word.
func TestTemporalTLSMustBeABoolean(t *testing.T) {
	for _, v := range []string{"yes", "on", " true", "true ", "maybe"} {
		clearTemporalEnv(t)
		t.Setenv("TEMPORAL_TLS", v)
		_, err := parseTemporalFlags(t).options()
		require.ErrorContains(t, err, "TEMPORAL_TLS", v)
		require.ErrorContains(t, err, "is not true or false", v)
	}
	clearTemporalEnv(t)
	t.Setenv("TEMPORAL_TLS", "true")
	o, err := parseTemporalFlags(t).options()
	require.NoError(t, err)
	require.True(t, usesTLS(o))
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/config"
)

func TestValidateMassGenConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "engine", "config", "testdata", "massgen", "*.yaml"))
	require.NoError(t, err)
	examples, err := filepath.Glob(filepath.Join("..", "..", "examples", "massgen", "*.yaml"))
	require.NoError(t, err)
	files = append(files, examples...)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), []string{"validate", "--config", f, "--json"}, &out, &errOut)
			require.Equal(t, 0, code, out.String()+errOut.String())
			var v validation
			require.NoError(t, json.Unmarshal(out.Bytes(), &v))
			assert.True(t, v.Valid)
			require.NotEmpty(t, v.Backends)
			for _, b := range v.Backends {
				assert.NotEmpty(t, b.BaseURL, b.Agent)
				assert.NotEmpty(t, b.Provider, b.Agent)
			}
			// The resolved config is a Conclave config of its own: it loads
			// to the same config, without warnings.
			data, err := resolvedYAML(v.Config)
			require.NoError(t, err)
			again, warnings, err := config.ParseWithWarnings(data, "resolved.yaml")
			require.NoError(t, err, string(data))
			assert.Empty(t, warnings)
			assert.Equal(t, v.Config, again)
		})
	}
}

func TestValidateReportsEverything(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	bad := write("bad.yaml", "agents:\n  - id: a\n    backend: {type: gemini, model: m, colour: red, temperature: 7}\n  - id: b\n    backend: {type: claude_code, model: sonnet}\n")
	warned := write("warned.yaml", "agent:\n  id: a\n  backend: {type: grok, model: grok-4, enable_web_search: true}\nui: {display_type: simple}\n")
	custom := write("custom.yaml", "agent:\n  id: a\n  backend: {type: chatcompletion, model: m, base_url: \"http://127.0.0.1:11434/v1\", api_key_env: OLLAMA_API_KEY}\n")
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"all errors at once", []string{"--config", bad}, 1, []string{`unknown key "colour"`, "temperature: 7 is out of range", `backend type "claude_code" is not supported`}},
		{"warnings pass", []string{"--config", warned}, 0, []string{"warning: agent.backend.enable_web_search", "note: ui", "https://api.x.ai/v1", "key $XAI_API_KEY (required"}},
		{"custom key variable", []string{"--config", custom}, 0, []string{"key $OLLAMA_API_KEY (optional, not set here; not a provider's variable: workers need --allow-key-env OLLAMA_API_KEY)"}},
		{"strict refuses warnings", []string{"--config", warned, "--strict"}, 1, []string{"enable_web_search", "(--strict)"}},
		{"missing file", []string{"--config", filepath.Join(dir, "none.yaml")}, 1, []string{"read config"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append([]string{"validate"}, tt.args...), &out, &errOut)
			assert.Equal(t, tt.code, code)
			for _, w := range tt.want {
				assert.Contains(t, out.String(), w)
			}
		})
	}
}

func TestRunStrictRefusesBeforeStarting(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "mg.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("agent:\n  id: a\n  backend: {type: openai, model: m, enable_web_search: true}\n"), 0o644))
	var out, errOut bytes.Buffer
	// MassGen's spelling; no server is reachable, so getting past the check
	// would fail differently.
	code := run(context.Background(), []string{"--config", cfg, "--strict", "--address", "127.0.0.1:1", "question"}, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "--strict: the config has settings Conclave would ignore")
	assert.Contains(t, errOut.String(), "agent.backend.enable_web_search")
}

func TestOneLine(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a  b\nc", 10, "a b c"},
		{"abcdef", 3, "abc..."},
		{"héllo", 2, "h..."},
		{"", 5, ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, oneLine(tt.in, tt.n))
	}
}

func TestMassGenAlias(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"--config", "x.yaml", "q"}, []string{"run", "--config", "x.yaml", "q"}},
		{[]string{"--config=x.yaml", "--automation", "q"}, []string{"run", "--config=x.yaml", "--automation", "q"}},
		{[]string{"run", "--config", "x.yaml", "q"}, []string{"run", "--config", "x.yaml", "q"}},
		{[]string{"validate", "--config", "x.yaml"}, []string{"validate", "--config", "x.yaml"}},
		{[]string{"--help"}, []string{"--help"}},
		{[]string{"--id", "s", "--", "--config"}, []string{"--id", "s", "--", "--config"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, massgenAlias(tt.in))
	}
}

package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMCPServerEntries(t *testing.T) {
	t.Parallel()
	base := "agents:\n  - id: a\n    backend:\n      model: m\n      mcp_servers:\n"
	tests := []struct {
		name    string
		entries string
		errs    []string
	}{
		{"named", "        - name: weather\n", nil},
		{"stdio with references", "        - {name: w, command: npx, env: {WEATHER_API_KEY: \"${WEATHER_API_KEY}\", MODE: fast}}\n", nil},
		{"http with bearer reference", "        - {name: h, url: \"https://mcp.example.com/mcp\", headers: {Authorization: \"Bearer ${MCP_TOKEN}\"}}\n", nil},
		{"literal credential", "        - {name: w, command: npx, env: {API_KEY: sk-live-123}}\n", []string{`mcp_servers[0].env["API_KEY"]: holds a credential written into the config`}},
		{"literal header", "        - {name: h, url: \"https://x.example/mcp\", headers: {X-Api-Token: abc}}\n", []string{"holds a credential"}},
		{"infrastructure variable", "        - {name: w, command: x, env: {K: \"${AWS_SECRET_ACCESS_KEY}\"}}\n", []string{"infrastructure variable (AWS_*)"}},
		{"bad name", "        - {name: \"a__b\", command: x}\n", []string{`"a__b" is not a server name`}},
		{"reserved name", "        - {name: command_line, command: x}\n", []string{"the command tool's server"}},
		{"duplicate", "        - name: w\n        - name: w\n", []string{`"w" is listed twice`}},
		{"stdio without command", "        - {name: w, type: stdio}\n", []string{"required for a stdio server"}},
		{"http without url", "        - {name: w, type: streamable-http}\n", []string{"required for a streamable-http server"}},
		{"unknown type", "        - {name: w, type: sse, url: \"https://x\"}\n", []string{`unsupported MCP server type "sse"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(base+tt.entries), "c.yaml")
			if tt.errs == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, e := range tt.errs {
				assert.ErrorContains(t, err, e)
			}
			assert.NotContains(t, err.Error(), "sk-live-123", "a credential is never echoed")
		})
	}
}

func TestCommandLineSettings(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte("agents:\n  - id: a\n    backend:\n      model: m\n      enable_mcp_command_line: true\n      command_line_execution_mode: vm\n      command_line_allowed_commands: [\"(\"]\n      tool_timeout_seconds: -1\n"), "c.yaml")
	require.Error(t, err)
	for _, e := range []string{`"vm" is not one of: local, docker`, "command_line_allowed_commands[0]: is not a regular expression", "tool_timeout_seconds: -1 is out of range"} {
		assert.ErrorContains(t, err, e)
	}
}

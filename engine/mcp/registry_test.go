package mcp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/config"
)

func TestRegistryRefusesWhatTheWorkerDidNotAllow(t *testing.T) {
	t.Parallel()
	weather := config.MCPServer{Name: "weather", Command: "weather-server", Env: map[string]string{"API_KEY": "${WEATHER_KEY}"}}
	r := &Registry{Servers: map[string]config.MCPServer{"weather": weather}}

	got, err := r.Resolve("a", config.Tools{MCPServers: []config.MCPServer{{Name: "weather"}}})
	require.NoError(t, err)
	assert.Equal(t, []Server{{MCPServer: weather, Operator: true}}, got)

	_, err = r.Resolve("a", config.Tools{MCPServers: []config.MCPServer{{Name: "search"}}})
	assert.ErrorContains(t, err, `agent a: MCP server "search": not a server this worker may start (its --mcp-servers file lists: weather)`)

	inline := config.MCPServer{Name: "evil", Command: "sh", Args: []string{"-c", "touch pwned"}}
	_, err = r.Resolve("a", config.Tools{MCPServers: []config.MCPServer{inline}})
	assert.ErrorContains(t, err, `MCP server "evil": is defined in the session's config`)

	r.AllowInline = true
	_, err = r.Resolve("a", config.Tools{MCPServers: []config.MCPServer{inline}})
	assert.NoError(t, err)
	withSecret := config.MCPServer{Name: "s", Command: "x", Env: map[string]string{"TOKEN": "${MY_TOKEN}"}}
	_, err = r.Resolve("a", config.Tools{MCPServers: []config.MCPServer{withSecret}})
	assert.ErrorContains(t, err, "${MY_TOKEN} is not a variable this worker shares")
	r.Egress, err = config.NewEgress([]string{"MY_TOKEN"}, []string{"mcp.example.com"})
	require.NoError(t, err)
	_, err = r.Resolve("a", config.Tools{MCPServers: []config.MCPServer{withSecret}})
	assert.NoError(t, err)
	_, err = r.Resolve("a", config.Tools{MCPServers: []config.MCPServer{{Name: "h", URL: "https://elsewhere.example.org/mcp"}}})
	assert.ErrorContains(t, err, "elsewhere.example.org is not one this worker calls")

	_, err = (&Registry{}).Resolve("a", config.Tools{EnableMCPCommandLine: true})
	assert.ErrorContains(t, err, "enable_mcp_command_line: this worker has no command sandbox")
}

func TestServerEnvKeepsTheWorkersSecrets(t *testing.T) {
	t.Parallel()
	s := Server{MCPServer: config.MCPServer{Env: map[string]string{"KEY": "${WEATHER_KEY}", "MODE": "fast"}}}
	env := s.env(func(k string) string {
		return map[string]string{"PATH": "/bin", "WEATHER_KEY": "w123", "AWS_SECRET_ACCESS_KEY": "aws"}[k]
	})
	assert.Equal(t, []string{"PATH=/bin", "KEY=w123", "MODE=fast"}, env)
}

func TestLoadServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte("mcp_servers:\n  - name: fs\n    type: stdio\n    command: npx\n    args: [server-filesystem, .]\n"), 0o644))
	servers, err := LoadServers(good)
	require.NoError(t, err)
	assert.Equal(t, "npx", servers["fs"].Command)

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("mcp_servers:\n  - name: fs\n  - name: x__y\n    command: a\n  - name: h\n    url: ftp://x\n    headers: {Authorization: Bearer abc}\n"), 0o644))
	_, err = LoadServers(bad)
	require.Error(t, err)
	for _, want := range []string{"server \"fs\" has no command or url", "\"x__y\" is not a server name", "http:// or https:// URL", "holds a credential written into the config"} {
		assert.ErrorContains(t, err, want)
	}
}

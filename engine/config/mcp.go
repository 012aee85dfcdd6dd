package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Tools are an agent's tools beyond its workspace, with MassGen's keys: the
// MCP servers it may call and the command tool. A session's config only
// names what it wants; the worker decides what it runs (engine/mcp's
// Registry): a server is looked up by name in the worker's --mcp-servers
// file, and an inline definition runs only on a worker that opts in.
type Tools struct {
	MCPServers []MCPServer `yaml:"mcp_servers,omitempty" json:"mcp_servers,omitempty"`
	// AllowedTools and ExcludeTools filter the tools offered, by the name
	// the model sees (mcp__weather__get_forecast); an empty allow-list
	// allows every tool.
	AllowedTools []string `yaml:"allowed_tools,omitempty" json:"allowed_tools,omitempty"`
	ExcludeTools []string `yaml:"exclude_tools,omitempty" json:"exclude_tools,omitempty"`
	// EnableMCPCommandLine gives the agent the command tool, which runs in
	// its workspace inside the worker's sandbox.
	EnableMCPCommandLine bool `yaml:"enable_mcp_command_line,omitempty" json:"enable_mcp_command_line,omitempty"`
	// CommandLineExecutionMode is MassGen's local or docker; both run in
	// the worker's sandbox (bubblewrap).
	CommandLineExecutionMode string `yaml:"command_line_execution_mode,omitempty" json:"command_line_execution_mode,omitempty"`
	// CommandLineAllowedCommands and CommandLineBlockedCommands are regular
	// expressions a command must match (one of) and must not match (any).
	CommandLineAllowedCommands []string `yaml:"command_line_allowed_commands,omitempty" json:"command_line_allowed_commands,omitempty"`
	CommandLineBlockedCommands []string `yaml:"command_line_blocked_commands,omitempty" json:"command_line_blocked_commands,omitempty"`
	// ToolTimeoutSeconds bounds one MCP or command call; 0 means
	// DefaultToolTimeoutSeconds.
	ToolTimeoutSeconds int `yaml:"tool_timeout_seconds,omitempty" json:"tool_timeout_seconds,omitempty"`
}

// DefaultToolTimeoutSeconds bounds a tool call when tool_timeout_seconds is
// not set: long enough for a browser page or a test run, short enough that
// a hung server does not hold the step until its round timeout.
const DefaultToolTimeoutSeconds = 120

// MaxToolTimeoutSeconds is the longest call a config may allow.
const MaxToolTimeoutSeconds = 3600

// MCP server transports, MassGen's names.
const (
	MCPStdio          = "stdio"
	MCPStreamableHTTP = "streamable-http"
)

// CommandServer is the server name of the command tool, as MassGen names
// its command-line MCP server: the tool reaches the model as
// mcp__command_line__execute_command.
const CommandServer = "command_line"

// MCPServer is one entry of mcp_servers. In a session's config an entry
// with only a name refers to the worker's server of that name; any other
// field makes it an inline definition. Env and header values are either
// plain text or ${VAR}, read from the worker's environment when the server
// starts, so that secrets never travel in a workflow input.
type MCPServer struct {
	Name    string            `yaml:"name" json:"name"`
	Type    string            `yaml:"type,omitempty" json:"type,omitempty"`
	Command string            `yaml:"command,omitempty" json:"command,omitempty"`
	Args    []string          `yaml:"args,omitempty" json:"args,omitempty"`
	Env     map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	Cwd     string            `yaml:"cwd,omitempty" json:"cwd,omitempty"`
	URL     string            `yaml:"url,omitempty" json:"url,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
}

// Inline reports whether the entry defines a server rather than naming one.
func (s MCPServer) Inline() bool {
	return s.Type != "" || s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" || s.URL != "" || len(s.Headers) > 0
}

// MCPToolName is the name a server's tool reaches the model under.
func MCPToolName(server, tool string) string { return "mcp__" + server + "__" + tool }

// ToolTimeout is the per-call timeout in seconds.
func (t Tools) ToolTimeout() int {
	if t.ToolTimeoutSeconds > 0 {
		return t.ToolTimeoutSeconds
	}
	return DefaultToolTimeoutSeconds
}

// HasTools reports whether the agent has any tool beyond its workspace.
func (t Tools) HasTools() bool { return len(t.MCPServers) > 0 || t.EnableMCPCommandLine }

var (
	// Server names become part of tool names, which providers limit to
	// [a-zA-Z0-9_-]{1,64}; "__" would make a tool name ambiguous.
	serverNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)
	// envRef is a ${VAR} reference inside an env or header value.
	envRef = regexp.MustCompile(`\$\{([^}]*)\}`)
)

// EnvRefs lists the variables value refers to as ${VAR}, in order.
func EnvRefs(value string) []string {
	var names []string
	for _, m := range envRef.FindAllStringSubmatch(value, -1) {
		names = append(names, m[1])
	}
	return names
}

// ExpandEnvRefs replaces every ${VAR} in value with getenv(VAR).
func ExpandEnvRefs(value string, getenv func(string) string) string {
	return envRef.ReplaceAllStringFunc(value, func(m string) string { return getenv(m[2 : len(m)-1]) })
}

// CheckMCPServer reports the problems of one server entry under path
// (agents[0].backend.mcp_servers[1]); a named reference has none beyond
// its name. The worker's --mcp-servers file is checked the same way.
func CheckMCPServer(path string, s MCPServer) []error {
	var v validator
	v.mcpServer(path, s)
	return v.errs
}

func (v *validator) mcpServer(p string, s MCPServer) {
	switch {
	case s.Name == "":
		v.add(p+".name", "required; name the server, e.g. weather")
	case strings.Contains(s.Name, "__") || !serverNamePattern.MatchString(s.Name):
		v.add(p+".name", fmt.Sprintf("%q is not a server name; use up to 32 letters, digits, '_' and '-' (no '__'), starting with a letter or digit", s.Name))
	case s.Name == CommandServer:
		v.add(p+".name", fmt.Sprintf("%q is the command tool's server; enable it with enable_mcp_command_line: true, or name this server otherwise", s.Name))
	}
	if !s.Inline() {
		return
	}
	typ := s.Type
	if typ == "" {
		typ = MCPStdio
		if s.URL != "" {
			typ = MCPStreamableHTTP
		}
	}
	switch typ {
	case MCPStdio:
		if strings.TrimSpace(s.Command) == "" {
			v.add(p+".command", "required for a stdio server; name the program to start, e.g. npx")
		}
		if s.URL != "" || len(s.Headers) > 0 {
			v.add(p+".url", "a stdio server has no url or headers; use type: streamable-http for an HTTP server")
		}
	case MCPStreamableHTTP, "http":
		u, err := url.Parse(s.URL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			v.add(p+".url", "required for a streamable-http server: an http:// or https:// URL such as https://mcp.example.com/mcp")
		case u.User != nil:
			v.add(p+".url", "must not contain a user or password; put credentials in headers as ${VAR}, read from the worker's environment")
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
			v.add(p+".command", "an HTTP server is not started by Conclave: it has no command, args, env or cwd")
		}
	default:
		v.add(p+".type", fmt.Sprintf("unsupported MCP server type %q; use stdio or streamable-http", s.Type))
	}
	v.secretValues(p+".env", s.Env)
	v.secretValues(p+".headers", s.Headers)
}

// secretValues refuses a credential written into a config: a value under a
// secret-looking name must be a ${VAR} reference, and every reference must
// name a variable a worker may share (not its infrastructure's).
func (v *validator) secretValues(p string, values map[string]string) {
	for _, k := range sortedKeys(values) {
		val := values[k]
		for _, name := range EnvRefs(val) {
			if !envPattern.MatchString(name) {
				v.add(keyPath(p, k), fmt.Sprintf("${%s} is not a variable name in upper case, e.g. ${WEATHER_API_KEY}", name))
			} else if rule, denied := DeniedKeyEnv(name); denied {
				v.add(keyPath(p, k), fmt.Sprintf("${%s} is a worker's infrastructure variable (%s), never given to a tool; use a variable of its own", name, rule))
			}
		}
		if secretHeader(k) && strings.TrimSpace(envRef.ReplaceAllString(val, "")) != "" && !bearerRef(val) {
			// The value is not echoed: it may be a credential.
			v.add(keyPath(p, k), "holds a credential written into the config; write it as ${VAR} (e.g. Bearer ${MCP_TOKEN}), read from the worker's environment")
		}
	}
}

// secretHeader reports a name whose value is a credential: API_KEY,
// X-Api-Key, Authorization, GITHUB_TOKEN, …
func secretHeader(k string) bool {
	n := normalKey(k)
	if SecretKeyName(n) {
		return true
	}
	for _, part := range []string{"key", "token", "secret", "password", "authorization", "credential"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// bearerRef accepts "Bearer ${VAR}" (an authorization scheme before a
// reference).
func bearerRef(val string) bool {
	scheme, rest, ok := strings.Cut(strings.TrimSpace(val), " ")
	return ok && len(EnvRefs(rest)) == 1 && strings.TrimSpace(envRef.ReplaceAllString(rest, "")) == "" &&
		slices.Contains([]string{"bearer", "token", "basic"}, strings.ToLower(scheme))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// tools checks an agent's tool settings.
func (v *validator) tools(bp string, t *Tools) {
	seen := map[string]bool{}
	for i, s := range t.MCPServers {
		p := indexPath(bp+".mcp_servers", i)
		v.mcpServer(p, s)
		if seen[s.Name] && s.Name != "" {
			v.add(p+".name", fmt.Sprintf("%q is listed twice; each server once", s.Name))
		}
		seen[s.Name] = true
	}
	if n := t.ToolTimeoutSeconds; n < 0 || n > MaxToolTimeoutSeconds {
		v.add(bp+".tool_timeout_seconds", fmt.Sprintf("%d is out of range; use 1 to %d seconds, or leave it out for %d", n, MaxToolTimeoutSeconds, DefaultToolTimeoutSeconds))
	}
	if m := t.CommandLineExecutionMode; m != "" && m != "local" && m != "docker" {
		v.add(bp+".command_line_execution_mode", fmt.Sprintf("%q is not one of: local, docker", m))
	}
	v.patterns(bp+".command_line_allowed_commands", t.CommandLineAllowedCommands)
	v.patterns(bp+".command_line_blocked_commands", t.CommandLineBlockedCommands)
}

func (v *validator) patterns(p string, list []string) {
	for i, re := range list {
		if _, err := regexp.Compile(re); err != nil {
			v.add(indexPath(p, i), fmt.Sprintf("is not a regular expression: %v", err))
		}
	}
}

// mcpSecretRef reports a key of an MCP server's env or headers: its value
// may name a credential as ${VAR}, which Validate checks (secretValues).
func mcpSecretRef(path string) bool {
	parent := parentPath(path)
	return strings.Contains(parent, ".mcp_servers[") && (strings.HasSuffix(parent, ".env") || strings.HasSuffix(parent, ".headers"))
}

// Package mcp gives agents tools that act outside Conclave: the MCP servers
// a worker's operator allows (stdio and streamable HTTP, through the
// official Go SDK) and the command tool, which runs commands in the agent's
// workspace inside a bubblewrap sandbox. A Toolbox is one step's set of
// them: opened when the step starts, closed — every server process with it
// — when the step ends.
//
// A session's config is untrusted (anyone who may start a workflow writes
// it), so the Registry decides what runs: a session names servers from the
// worker's list, and an inline definition runs only on a worker that opted
// in. Secrets come from the worker's environment, under the rules of model
// keys (config.Egress).
package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/config"
)

// Registry is a worker's rule for what sessions may run.
type Registry struct {
	// Servers are the servers this worker may start, by name (--mcp-servers).
	Servers map[string]config.MCPServer
	// AllowInline lets a session's config define servers itself: a
	// developer's machine (conclave dev, the demo), never a shared worker.
	AllowInline bool
	// Egress says which variables a session's inline servers may read and
	// which hosts its HTTP servers may reach, as for model keys.
	Egress config.Egress
	// Sandbox runs the command tool; nil means it is not available.
	Sandbox *Sandbox
}

// LoadServers reads a worker's --mcp-servers file: YAML (or JSON) with an
// mcp_servers list in the entry format of a session's config.
func LoadServers(path string) (map[string]config.MCPServer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the MCP servers file: %w", err)
	}
	var file struct {
		MCPServers []config.MCPServer `yaml:"mcp_servers"`
	}
	f, err := config.DecodeYAML(data, path, &file)
	if err != nil {
		return nil, err
	}
	out := map[string]config.MCPServer{}
	for i, s := range file.MCPServers {
		p := fmt.Sprintf("mcp_servers[%d]", i)
		if !s.Inline() {
			f.Add(p, fmt.Errorf("server %q has no command or url; the worker's file defines servers", s.Name))
		}
		for _, e := range config.CheckMCPServer(p, s) {
			f.Add(p, e)
		}
		if _, dup := out[s.Name]; dup {
			f.Add(p+".name", fmt.Errorf("%q is listed twice", s.Name))
		}
		out[s.Name] = s
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Names are the servers this worker may start, sorted.
func (r *Registry) Names() []string {
	var names []string
	for n := range r.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Resolve returns the servers agent may start, as this worker defines or
// allows them, or an error naming the first server it may not.
func (r *Registry) Resolve(agent string, t config.Tools) ([]Server, error) {
	var out []Server
	for _, s := range t.MCPServers {
		srv, err := r.resolve(s)
		if err != nil {
			return nil, fmt.Errorf("agent %s: MCP server %q: %w", agent, s.Name, err)
		}
		out = append(out, srv)
	}
	if t.EnableMCPCommandLine && (r.Sandbox == nil || r.Sandbox.Missing != "") {
		why := "this worker has no command sandbox"
		if r.Sandbox != nil {
			why = r.Sandbox.Missing
		}
		return nil, fmt.Errorf("agent %s: enable_mcp_command_line: %s; install bubblewrap on the worker (apt-get install bubblewrap), or ask its operator to run it with --unsandboxed-commands", agent, why)
	}
	return out, nil
}

// Check refuses a session whose agents name servers this worker does not
// allow: the first activity asks it, so nothing of the session is stored.
func (r *Registry) Check(cfg *config.Config) error {
	var errs []error
	for _, a := range cfg.Agents {
		if _, err := r.Resolve(a.ID, a.Backend.Tools); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Server is a server this worker starts: its definition and whether the
// worker's operator wrote it (else a session did, with the opt-in).
type Server struct {
	config.MCPServer
	Operator bool
}

func (r *Registry) resolve(s config.MCPServer) (Server, error) {
	if !s.Inline() {
		def, ok := r.Servers[s.Name]
		if !ok {
			listed := "none"
			if names := r.Names(); len(names) > 0 {
				listed = strings.Join(names, ", ")
			}
			return Server{}, fmt.Errorf("not a server this worker may start (its --mcp-servers file lists: %s); ask the worker's operator to add it", listed)
		}
		return Server{MCPServer: def, Operator: true}, nil
	}
	if !r.AllowInline {
		return Server{}, errors.New("is defined in the session's config (command, url or env), and this worker only starts the servers its operator lists (--mcp-servers); " +
			"name the server only (- name: " + s.Name + ") and have it listed there, or run a development worker with --allow-inline-mcp-servers")
	}
	for _, values := range []map[string]string{s.Env, s.Headers} {
		for _, v := range values {
			for _, name := range config.EnvRefs(v) {
				if !slices.Contains(r.Egress.KeyEnvs(), name) {
					return Server{}, fmt.Errorf("${%s} is not a variable this worker shares; ask its operator to allow it (conclave worker --allow-key-env %s)", name, name)
				}
			}
		}
	}
	if s.URL != "" {
		if err := r.Egress.Check(config.Backend{BaseURL: s.URL}, os.Getenv); err != nil {
			return Server{}, err
		}
	}
	return Server{MCPServer: s}, nil
}

// env is the server's environment: the worker's PATH, HOME and locale, so
// that npx and friends work, and the entry's values with ${VAR} read from
// the worker's environment. Nothing else of the worker's environment (its
// storage and Temporal credentials) reaches the server.
func (s Server) env(getenv func(string) string) []string {
	var out []string
	for _, k := range []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "NODE_PATH", "npm_config_cache"} {
		if v := getenv(k); v != "" {
			out = append(out, k+"="+v)
		}
	}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+config.ExpandEnvRefs(s.Env[k], getenv))
	}
	return out
}

// RefusedError is a session's tool setting this worker does not run.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// OpenFor starts agent a's servers and command tool in its workspace, as
// this registry allows them; logf gets the servers' stderr.
func (r *Registry) OpenFor(ctx context.Context, a *config.Agent, workspace string, logf func(string, ...any)) (*Toolbox, error) {
	servers, err := r.Resolve(a.ID, a.Backend.Tools)
	if err != nil {
		return nil, &RefusedError{Err: err}
	}
	b := a.Backend
	o := Options{Workspace: workspace, Timeout: time.Duration(b.ToolTimeout()) * time.Second,
		Allowed: b.AllowedTools, Excluded: b.ExcludeTools, Logf: logf, Egress: r.Egress}
	if b.EnableMCPCommandLine {
		o.Command = &CommandOptions{Sandbox: r.Sandbox, Allowed: b.CommandLineAllowedCommands, Blocked: b.CommandLineBlockedCommands}
	}
	return Open(ctx, servers, o)
}

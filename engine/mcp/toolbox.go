package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/runes"
	"github.com/conclave-ai/conclave/engine/tools"
)

// MaxFrameBytes bounds one message from a server (a tool list, a result)
// while it is read: a server that sends more is cut off and its call fails.
// Results are cut further, to tools.MaxResultBytes, before the model sees
// them; images and binary content go to files instead.
const MaxFrameBytes = 16 << 20

// MaxTools bounds the tools one step offers from its servers: every tool's
// schema is sent with every model call.
const MaxTools = 128

// A tool's description and schema go with every model call: a server
// cannot make them large.
const (
	maxDescriptionBytes = 2 << 10
	maxSchemaBytes      = 32 << 10
)

// toolNamePattern is what model providers accept as a function name.
var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// startTimeout bounds a server's start and its tool listing.
const startTimeout = 60 * time.Second

// IdempotencyKey is the _meta field of every tools/call request that holds
// the call's idempotency key (agent.CallKey): a call that runs again after
// a worker crash carries the same key, so a server with side effects can
// do them once.
const IdempotencyKey = "conclave/idempotency_key"

// StartError is a server that could not start or list its tools. The step
// fails without retries: the same config on the same worker fails again.
type StartError struct {
	Server string
	Err    error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("MCP server %q could not start: %v; check its command (or url) and that it speaks MCP on stdio (or streamable HTTP)", e.Server, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// Options configure a step's Toolbox.
type Options struct {
	// Workspace is the agent's workspace directory: a stdio server's
	// default working directory, where images and binary results are
	// stored, and where commands run.
	Workspace string
	// Timeout bounds one call.
	Timeout time.Duration
	// Allowed and Excluded filter tools by the name the model sees.
	Allowed, Excluded []string
	// Command enables the command tool with these filters.
	Command *CommandOptions
	Getenv  func(string) string
	// Egress is the worker's host rule, for HTTP servers a session defined.
	Egress config.Egress
	// Logf reports a server's stderr lines and stop problems.
	Logf func(format string, args ...any)
}

// Toolbox is one step's MCP servers and command tool (agent.Toolbox).
type Toolbox struct {
	o       Options
	servers []*server
	routes  map[string]route
	specs   []tools.Spec
	command *command
}

type route struct {
	srv  *server
	tool string
}

type server struct {
	name    string
	session *sdk.ClientSession
	proc    *process // stdio servers
	mu      sync.Mutex
	dead    error // set once the server stopped answering
}

// Open starts the servers and lists their tools. A server that cannot start
// is a *StartError; the servers already started are stopped again.
func Open(ctx context.Context, servers []Server, o Options) (_ *Toolbox, err error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Timeout <= 0 {
		o.Timeout = config.DefaultToolTimeoutSeconds * time.Second
	}
	tb := &Toolbox{o: o, routes: map[string]route{}}
	defer func() {
		if err != nil {
			tb.Close()
		}
	}()
	for _, s := range servers {
		srv, err := tb.start(ctx, s)
		if err != nil {
			return nil, &StartError{Server: s.Name, Err: err}
		}
		tb.servers = append(tb.servers, srv)
		if err := tb.list(ctx, srv); err != nil {
			return nil, &StartError{Server: s.Name, Err: err}
		}
	}
	if o.Command != nil {
		tb.command = &command{o: *o.Command, dir: o.Workspace, timeout: o.Timeout}
		spec := tb.command.spec()
		if tb.offered(spec.Name) {
			tb.specs = append(tb.specs, spec)
		}
	}
	if len(tb.specs) > MaxTools {
		return nil, fmt.Errorf("the MCP servers offer %d tools, over the limit of %d for one agent; narrow them with allowed_tools", len(tb.specs), MaxTools)
	}
	return tb, nil
}

func (tb *Toolbox) start(ctx context.Context, s Server) (*server, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "conclave", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	srv := &server{name: s.Name}
	var transport sdk.Transport
	if s.URL != "" {
		// The operator's servers may be anywhere but link-local and
		// metadata addresses; a session's, only where its models may go.
		guard := config.Egress{}.WithPrivateHosts(config.AllPrivateHosts)
		if !s.Operator {
			guard = tb.o.Egress
		}
		u, err := url.Parse(s.URL)
		if err == nil {
			err = guard.CheckURL(u)
		}
		if err != nil {
			return nil, err
		}
		client := llm.GuardedHTTPClient(guard)
		client.Transport = &headers{values: s.Headers, getenv: tb.o.Getenv, base: client.Transport}
		transport = &sdk.StreamableClientTransport{Endpoint: s.URL, MaxRetries: -1, DisableStandaloneSSE: true, HTTPClient: client}
	} else {
		p, err := startProcess(s, tb.o.Workspace, tb.o.Getenv, tb.o.Logf)
		if err != nil {
			return nil, err
		}
		srv.proc = p
		transport = &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin, MaxLineLength: MaxFrameBytes}
	}
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		if srv.proc != nil {
			srv.proc.stop()
			if msg := srv.proc.lastErr(); msg != "" {
				err = fmt.Errorf("%w (it said: %s)", err, msg)
			}
		}
		return nil, err
	}
	srv.session = session
	return srv, nil
}

// list adds srv's tools, under MassGen's names, that the filters allow.
func (tb *Toolbox) list(ctx context.Context, srv *server) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for t, err := range srv.session.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list its tools: %w", err)
		}
		name := config.MCPToolName(srv.name, t.Name)
		if !tb.offered(name) {
			continue
		}
		if !toolNamePattern.MatchString(name) {
			// Providers refuse the whole request for one such name.
			tb.o.Logf("MCP server %s: tool %q is not offered: its name is not 1 to 64 letters, digits, '_' or '-' as %s", srv.name, t.Name, name)
			continue
		}
		if len(tb.specs) >= MaxTools {
			return fmt.Errorf("it offers more than %d tools; narrow them with allowed_tools", MaxTools)
		}
		params, err := schemaMap(t.InputSchema)
		if data, _ := json.Marshal(params); err != nil || len(data) > maxSchemaBytes {
			tb.o.Logf("MCP server %s: tool %s is not offered: its input schema is over %d bytes or not an object", srv.name, t.Name, maxSchemaBytes)
			continue
		}
		desc, _ := runes.Truncate(t.Description, maxDescriptionBytes)
		tb.specs = append(tb.specs, tools.Spec{Name: name, Description: desc, Parameters: params})
		tb.routes[name] = route{srv: srv, tool: t.Name}
	}
	return nil
}

// schemaMap is an input schema as the model's tool parameters.
func schemaMap(schema any) (map[string]any, error) {
	out := map[string]any{"type": "object", "properties": map[string]any{}}
	if schema == nil {
		return out, nil
	}
	data, err := json.Marshal(schema)
	if err != nil {
		return out, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return out, err
	}
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	return m, nil
}

func (tb *Toolbox) offered(name string) bool {
	if slices.Contains(tb.o.Excluded, name) {
		return false
	}
	return len(tb.o.Allowed) == 0 || slices.Contains(tb.o.Allowed, name)
}

// Specs are the tools offered, in server order.
func (tb *Toolbox) Specs() []tools.Spec { return tb.specs }

// Has reports whether name is a tool of this toolbox.
func (tb *Toolbox) Has(name string) bool {
	_, ok := tb.routes[name]
	return ok || (tb.command != nil && name == commandTool && tb.offered(name))
}

// Call runs one call. Whatever goes wrong — a tool error, a JSON-RPC error,
// a crashed or hung server — is an error result for the model; only ctx
// ends the call otherwise.
func (tb *Toolbox) Call(ctx context.Context, c agent.Call) tools.Result {
	if c.Name == commandTool && tb.command != nil {
		return tb.command.run(ctx, c.Arguments)
	}
	r, ok := tb.routes[c.Name]
	if !ok {
		return tools.Result{IsError: true, Content: fmt.Sprintf("there is no tool %q; use the tools offered", c.Name)}
	}
	if err := r.srv.err(); err != nil {
		return tools.Result{IsError: true, Content: fmt.Sprintf("%s: the MCP server %q stopped earlier in this step (%v); its tools cannot be used until the next step", c.Name, r.srv.name, err)}
	}
	var args map[string]any
	if strings.TrimSpace(c.Arguments) != "" {
		if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
			return tools.Result{IsError: true, Content: fmt.Sprintf("%s: the arguments are not a JSON object (%v); send an object matching the tool's schema", c.Name, err)}
		}
	}
	callCtx, cancel := context.WithTimeout(ctx, tb.o.Timeout)
	defer cancel()
	res, err := r.srv.session.CallTool(callCtx, &sdk.CallToolParams{Name: r.tool, Arguments: args, Meta: sdk.Meta{IdempotencyKey: c.Key}})
	switch {
	case ctx.Err() != nil:
		return tools.Result{IsError: true, Content: fmt.Sprintf("%s was stopped: the step ended", c.Name)}
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		// A server that does not answer in time may never: stop it, so a
		// hung call does not hold the process for the rest of the step.
		r.srv.fail(fmt.Errorf("a call took longer than %s", tb.o.Timeout))
		return tools.Result{IsError: true, Content: fmt.Sprintf("%s did not answer within %s and was stopped; its server is stopped for the rest of this step. Try another way, or a smaller request in the next step", c.Name, tb.o.Timeout)}
	case err != nil && r.srv.crashed():
		r.srv.fail(err)
		return tools.Result{IsError: true, Content: fmt.Sprintf("%s failed: the MCP server %q stopped during the call (%s); its tools cannot be used for the rest of this step", c.Name, r.srv.name, r.srv.exitDetail())}
	case err != nil:
		return tools.Result{IsError: true, Content: fmt.Sprintf("%s failed: %v", c.Name, err)}
	}
	return tb.result(c, res)
}

// Close stops every server and its processes, and waits for them.
func (tb *Toolbox) Close() {
	for _, s := range tb.servers {
		if s.session != nil {
			done := make(chan struct{})
			go func() { _ = s.session.Close(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Second):
			}
		}
		if s.proc != nil {
			s.proc.stop()
		}
	}
}

func (s *server) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// fail marks s stopped and ends its process.
func (s *server) fail(err error) {
	s.mu.Lock()
	if s.dead == nil {
		s.dead = err
	}
	s.mu.Unlock()
	if s.proc != nil {
		s.proc.stop()
	}
}

// crashed reports a stdio server whose process has exited.
func (s *server) crashed() bool { return s.proc != nil && s.proc.exited() }

func (s *server) exitDetail() string {
	if s.proc == nil {
		return "connection lost"
	}
	return s.proc.exitDetail()
}

// headers adds a server's HTTP headers, with ${VAR} read from the worker's
// environment, and bounds what a response may bring.
type headers struct {
	values map[string]string
	getenv func(string) string
	base   http.RoundTripper
}

func (h *headers) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.values {
		req.Header.Set(k, config.ExpandEnvRefs(v, h.getenv))
	}
	resp, err := h.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &capped{r: resp.Body, left: MaxFrameBytes}
	return resp, nil
}

// capped fails a response body after its limit.
type capped struct {
	r    io.ReadCloser
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("the server sent more than %d bytes in one response", MaxFrameBytes)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *capped) Close() error { return c.r.Close() }

// outputDir is where binary results are stored, inside the workspace.
const outputDir = "tool-output"

// result turns a server's result into the model's text: text as is,
// images, audio and binary resources stored in the workspace and named.
func (tb *Toolbox) result(c agent.Call, res *sdk.CallToolResult) tools.Result {
	var b strings.Builder
	for i, content := range res.Content {
		if i > 0 {
			b.WriteString("\n")
		}
		switch v := content.(type) {
		case *sdk.TextContent:
			b.WriteString(v.Text)
		case *sdk.ImageContent:
			b.WriteString(tb.store(c, i, "image", v.MIMEType, v.Data))
		case *sdk.AudioContent:
			b.WriteString(tb.store(c, i, "audio", v.MIMEType, v.Data))
		case *sdk.ResourceLink:
			fmt.Fprintf(&b, "[resource %s: %s]", v.Name, v.URI)
		case *sdk.EmbeddedResource:
			switch {
			case v.Resource == nil:
			case v.Resource.Blob != nil:
				b.WriteString(tb.store(c, i, "resource "+v.Resource.URI, v.Resource.MIMEType, v.Resource.Blob))
			default:
				b.WriteString(v.Resource.Text)
			}
		default:
			data, _ := json.Marshal(content)
			b.Write(data)
		}
		if b.Len() > tools.MaxResultBytes {
			break // the rest would be cut anyway
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		b.Write(data)
	}
	return tools.Result{Content: b.String(), IsError: res.IsError}
}

// store writes binary content into the workspace and returns the line that
// tells the model where it is.
func (tb *Toolbox) store(c agent.Call, i int, kind, mime string, data []byte) string {
	if tb.o.Workspace == "" {
		return fmt.Sprintf("[%s, %s, %d bytes: not kept, this step has no workspace]", kind, mime, len(data))
	}
	name := fmt.Sprintf("%s-%s-%d%s", strings.TrimPrefix(c.Name, "mcp__"), shortKey(c.Key), i, extension(mime))
	rel := filepath.ToSlash(filepath.Join(outputDir, name))
	root, err := os.OpenRoot(tb.o.Workspace)
	if err == nil {
		defer root.Close()
		if err = root.MkdirAll(outputDir, 0o755); err == nil {
			err = root.WriteFile(rel, data, 0o644)
		}
	}
	if err != nil {
		return fmt.Sprintf("[%s, %s, %d bytes: could not be stored in the workspace (%v)]", kind, mime, len(data), err)
	}
	return fmt.Sprintf("[%s, %s, %d bytes, stored in your workspace as %s]", kind, mime, len(data), rel)
}

func shortKey(k string) string {
	if len(k) > 8 {
		return k[:8]
	}
	if k == "" {
		return "call"
	}
	return k
}

func extension(mime string) string {
	switch mime {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "audio/wav", "audio/x-wav":
		return ".wav"
	case "audio/mpeg":
		return ".mp3"
	case "application/pdf":
		return ".pdf"
	}
	return ".bin"
}

// ensure Toolbox is an agent.Toolbox.
var _ agent.Toolbox = (*Toolbox)(nil)

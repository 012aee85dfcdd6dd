package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/conclave-ai/conclave/activities"
	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/mcp"
	"github.com/conclave-ai/conclave/engine/step"
	"github.com/conclave-ai/conclave/internal/mcptest"
)

// envMCPServers names the worker's --mcp-servers file where no flag is given.
const envMCPServers = "CONCLAVE_MCP_SERVERS"

// toolFlags are a worker's rule for what MCP servers and commands sessions
// may run (docs/tools.md).
type toolFlags struct {
	servers     string
	inline      bool
	network     bool
	unsandboxed bool
}

// add registers the flags; dev says the command runs a developer's own
// sessions, where inline servers are allowed by default.
func (f *toolFlags) add(cmd *cobra.Command, dev bool) {
	cmd.Flags().StringVar(&f.servers, "mcp-servers", os.Getenv(envMCPServers),
		"YAML file listing the MCP servers sessions may use by name (mcp_servers: entries as in a config; env "+envMCPServers+")")
	cmd.Flags().BoolVar(&f.inline, "allow-inline-mcp-servers", dev,
		"let sessions' configs define MCP servers themselves (run any program on this machine): only for your own sessions on your own machine")
	cmd.Flags().BoolVar(&f.network, "command-network", false, "give the command tool (enable_mcp_command_line) network access")
	cmd.Flags().BoolVar(&f.unsandboxed, "unsandboxed-commands", false,
		"run the command tool without bubblewrap when it is missing (commands can then read and write anything this worker can)")
}

func (f *toolFlags) registry(egress config.Egress) (*mcp.Registry, error) {
	r := &mcp.Registry{AllowInline: f.inline, Egress: egress, Sandbox: mcp.FindSandbox(f.network, f.unsandboxed)}
	if f.servers != "" {
		servers, err := mcp.LoadServers(f.servers)
		if err != nil {
			return nil, fmt.Errorf("--mcp-servers: %w", err)
		}
		r.Servers = servers
	}
	return r, nil
}

// newToolServerCmd is the example MCP server the demo and the tests start
// (`command: conclave`, args [tool-server]): a weather stand-in and tools
// that fail on purpose.
func newToolServerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "tool-server",
		Short:  "Serve the example MCP server on stdin/stdout (the demo's weather stand-in)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return mcptest.Serve(cmd.Context())
		},
	}
}

// toolReport describes each agent's tools for `conclave validate`, and
// warns when the command tool is asked for where no sandbox exists (a
// worker on this machine would refuse the session).
func toolReport(source string, cfg *config.Config, warnings []config.Warning, sandbox *mcp.Sandbox) ([]string, []config.Warning) {
	var lines []string
	for i, a := range cfg.Agents {
		b := a.Backend
		for _, s := range b.MCPServers {
			how := "named: a worker's --mcp-servers file must list it"
			if s.Inline() {
				how = "defined here: runs on conclave dev and demo; a shared worker needs it in its --mcp-servers file, or --allow-inline-mcp-servers"
			}
			lines = append(lines, fmt.Sprintf("%s: MCP server %s (%s)", a.ID, s.Name, how))
		}
		if b.EnableMCPCommandLine {
			lines = append(lines, fmt.Sprintf("%s: command tool, sandbox on this machine: %s", a.ID, sandbox.Describe()))
			if sandbox.Missing != "" {
				warnings = append(warnings, config.Warning{Source: source, Path: fmt.Sprintf("agents[%d].backend.enable_mcp_command_line", i),
					Message: "no command sandbox here (" + sandbox.Missing + "): a worker like this machine refuses the session unless run with --unsandboxed-commands"})
			}
		}
	}
	return lines, warnings
}

// stepTools opens an agent's tools in step mode, which runs on the
// caller's own machine: servers defined in the config run, as on conclave
// dev; $CONCLAVE_MCP_SERVERS adds named ones.
func stepTools(egress config.Egress, stderr io.Writer) step.ToolOpener {
	return func(ctx context.Context, a *config.Agent, workspace string) (agent.Toolbox, func(), error) {
		f := toolFlags{servers: os.Getenv(envMCPServers), inline: true}
		r, err := f.registry(egress)
		if err != nil {
			return nil, nil, err
		}
		tb, err := r.OpenFor(ctx, a, workspace, func(format string, args ...any) { fmt.Fprintf(stderr, "conclave: "+format+"\n", args...) })
		if err != nil {
			return nil, nil, err
		}
		return tb, tb.Close, nil
	}
}

// noteTools reads a running agent step's heartbeat (activities.Progress)
// and notes its tool calls for the agent's progress line: the count, and
// the tool running now. The tool name comes from the model; it is shown
// as one safe line.
func (w *watcher) noteTools(ctx context.Context, id string, pa *workflowpb.PendingActivityInfo) {
	if pa.GetHeartbeatDetails() == nil || pa.GetActivityType().GetName() != contract.NameAgentStep {
		return
	}
	var p activities.Progress
	if w.dc.FromPayloads(pa.GetHeartbeatDetails(), &p) != nil || (p.ToolCalls == 0 && p.Tool == "") {
		return
	}
	agent, _, _ := strings.Cut(w.summary(ctx, id, pa.GetActivityId(), pa.GetActivityType().GetName()), " · ")
	note := fmt.Sprintf(" · tool calls %d", p.ToolCalls)
	if p.Tool != "" {
		note += " · calling " + terminalLine(p.Tool)
	}
	w.tools[agent] = note
}

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/tools"
)

// commandTool is the command tool's name, as MassGen's command-line server
// offers it.
var commandTool = config.MCPToolName(config.CommandServer, "execute_command")

// Limits of one command: its output as the model gets it, the processes it
// may run at once (a fork bomb stops there), the size of files it writes
// and its memory.
const (
	MaxCommandOutput    = 64 << 10
	maxCommandProcs     = 256
	maxCommandFileBytes = 256 << 20
	maxCommandMemory    = 2 << 30
)

// Sandbox is how a worker runs commands: inside bubblewrap (Bwrap), with
// the network when Network is set, or — only when the operator said so —
// without a sandbox (Unsandboxed).
type Sandbox struct {
	Bwrap       string // path of bwrap
	Prlimit     string // path of prlimit (util-linux)
	Setpriv     string // path of setpriv (util-linux), for a root worker
	Network     bool
	Unsandboxed bool
	// Missing says why commands cannot run here ("" when they can).
	Missing string
}

// FindSandbox looks for bubblewrap and checks that it can make a sandbox on
// this machine (user namespaces may be off, as in some containers).
func FindSandbox(network, unsandboxed bool) *Sandbox {
	s := &Sandbox{Network: network, Unsandboxed: unsandboxed}
	var err error
	if s.Prlimit, err = exec.LookPath("prlimit"); err != nil {
		s.Missing = "prlimit (util-linux) is not installed; commands run under its limits"
		return s
	}
	s.Setpriv, _ = exec.LookPath("setpriv")
	path, err := exec.LookPath("bwrap")
	switch {
	case err != nil && unsandboxed:
		return s
	case err != nil:
		s.Missing = "bubblewrap (bwrap) is not installed"
		return s
	case os.Geteuid() == 0 && s.Setpriv == "":
		s.Missing = "setpriv (util-linux) is not installed; a root worker needs it to run commands as nobody"
		return s
	}
	s.Bwrap = path
	dir, err := os.MkdirTemp("", "conclave-sandbox-probe-")
	if err == nil {
		defer os.RemoveAll(dir)
		c := &command{o: CommandOptions{Sandbox: s}, dir: dir}
		var probe *exec.Cmd
		if probe, err = c.build(context.Background(), "true"); err == nil {
			var out []byte
			if out, err = probe.CombinedOutput(); err != nil {
				err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
			}
		}
	}
	if err != nil {
		s.Bwrap = ""
		if !unsandboxed {
			s.Missing = fmt.Sprintf("bubblewrap cannot make a sandbox here (%v); user namespaces may be disabled", err)
		}
	}
	return s
}

// Describe is the sandbox as a worker reports it at start.
func (s *Sandbox) Describe() string {
	switch {
	case s == nil:
		return "none"
	case s.Missing != "":
		return "unavailable: " + s.Missing
	case s.Bwrap == "":
		return "UNSANDBOXED (--unsandboxed-commands)"
	case s.Network:
		return "bubblewrap, with network"
	}
	return "bubblewrap, no network"
}

// CommandOptions are an agent's command settings.
type CommandOptions struct {
	Sandbox *Sandbox
	Allowed []string // regular expressions; one must match
	Blocked []string // regular expressions; none may match
}

type command struct {
	o       CommandOptions
	dir     string
	timeout time.Duration
}

func (c *command) spec() tools.Spec {
	net := "no network access"
	if c.o.Sandbox != nil && c.o.Sandbox.Network {
		net = "network access"
	}
	return tools.Spec{
		Name: commandTool,
		Description: fmt.Sprintf("Run a shell command (sh -c) in your workspace, in a sandbox: the workspace is the only writable "+
			"directory, %s, at most %s and %d KiB of output are returned. Returns the exit code, stdout and stderr.", net, c.timeout, MaxCommandOutput>>10),
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"command": map[string]any{"type": "string", "description": "The command line, e.g. 'python3 test.py'."},
			},
			"required":             []string{"command"},
			"additionalProperties": false,
		},
	}
}

func (c *command) run(ctx context.Context, args string) tools.Result {
	var v struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal([]byte(args), &v); err != nil || strings.TrimSpace(v.Command) == "" {
		return tools.Result{IsError: true, Content: commandTool + ": send {\"command\": \"...\"} with a non-empty command"}
	}
	if why := c.refused(v.Command); why != "" {
		return tools.Result{IsError: true, Content: commandTool + ": " + why}
	}
	if c.dir == "" || c.o.Sandbox == nil || c.o.Sandbox.Prlimit == "" || (c.o.Sandbox.Bwrap == "" && !c.o.Sandbox.Unsandboxed) {
		return tools.Result{IsError: true, Content: commandTool + ": commands cannot run on this worker (no workspace or no sandbox)"}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cmd, err := c.build(ctx, v.Command)
	if err != nil {
		return tools.Result{IsError: true, Content: fmt.Sprintf("%s: the command could not be prepared: %v", commandTool, err)}
	}
	var out, errOut capBuffer
	out.limit, errOut.limit = MaxCommandOutput, MaxCommandOutput
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Cancel = func() error { killGroup(cmd); return nil }
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	killGroup(cmd) // what it left in the background goes with it
	code := 0
	status := ""
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		status = fmt.Sprintf("killed: it ran longer than %s (the limit for one command)", c.timeout)
		code = -1
	case err != nil:
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			return tools.Result{IsError: true, Content: fmt.Sprintf("%s: could not run the command: %v", commandTool, err)}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d\n", code)
	if status != "" {
		b.WriteString(status + "\n")
	}
	fmt.Fprintf(&b, "stdout:\n%s", out.String())
	fmt.Fprintf(&b, "\nstderr:\n%s", errOut.String())
	return tools.Result{Content: b.String(), IsError: code != 0}
}

// refused checks the agent's allow and block lists.
func (c *command) refused(line string) string {
	for _, re := range c.o.Blocked {
		if m, err := regexp.MatchString(re, line); err == nil && m {
			return fmt.Sprintf("the command matches the blocked pattern %q and was not run", re)
		}
	}
	if len(c.o.Allowed) == 0 {
		return ""
	}
	for _, re := range c.o.Allowed {
		if m, err := regexp.MatchString("^(?:"+re+")$", line); err == nil && m {
			return ""
		}
	}
	return fmt.Sprintf("the command matches none of the allowed patterns (%s) and was not run", strings.Join(c.o.Allowed, ", "))
}

// sandboxUID runs commands when the worker is root: as root, neither the
// process limit nor the file permissions would hold.
const sandboxUID = 65534

// build makes the command: sh -c under prlimit (processes, file size,
// memory), inside bubblewrap with the system directories read-only, the
// workspace the only writable path, a private /tmp, no network unless
// allowed, and its own PID namespace that dies with it. A root worker's
// commands run as nobody (setpriv), without capabilities.
func (c *command) build(ctx context.Context, line string) (*exec.Cmd, error) {
	s := c.o.Sandbox
	limited := []string{s.Prlimit, fmt.Sprintf("--nproc=%d", maxCommandProcs), fmt.Sprintf("--fsize=%d", maxCommandFileBytes),
		fmt.Sprintf("--as=%d", maxCommandMemory), "--", "sh", "-c", line}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "LANG=C.UTF-8", "TMPDIR=/tmp"}
	if s.Bwrap == "" {
		cmd := exec.CommandContext(ctx, limited[0], limited[1:]...)
		cmd.Dir = c.dir
		cmd.Env = append(env[:1:1], "HOME="+c.dir, "LANG=C.UTF-8")
		cmd.SysProcAttr = procAttr()
		return cmd, nil
	}
	// /tmp is the command's own, and writable by the unprivileged user a
	// root worker runs it as (TMPDIR points there).
	args := []string{"--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp",
		"--bind", c.dir, "/workspace", "--chdir", "/workspace",
		"--die-with-parent", "--new-session", "--clearenv"}
	root := os.Geteuid() == 0
	if root {
		// No user namespace: setpriv must leave root for a real uid, so
		// that the process limit counts (root is exempt from it).
		args = append(args, "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try")
	} else {
		args = append(args, "--unshare-all")
	}
	if !s.Network {
		args = append(args, "--unshare-net")
	} else {
		args = append(args, "--share-net")
	}
	for _, dir := range []string{"/usr", "/etc", "/opt"} {
		args = append(args, "--ro-bind-try", dir, dir)
	}
	for _, dir := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64"} {
		if target, err := os.Readlink(dir); err == nil {
			args = append(args, "--symlink", target, dir)
		} else {
			args = append(args, "--ro-bind-try", dir, dir)
		}
	}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		args = append(args, "--setenv", k, v)
	}
	args = append(args, "--")
	if root {
		if err := chownTree(c.dir, sandboxUID); err != nil {
			return nil, fmt.Errorf("hand the workspace to the sandbox user: %w", err)
		}
		id := strconv.Itoa(sandboxUID)
		args = append(args, s.Setpriv, "--reuid", id, "--regid", id, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all")
	}
	cmd := exec.CommandContext(ctx, s.Bwrap, append(args, limited...)...)
	cmd.SysProcAttr = procAttr()
	return cmd, nil
}

// chownTree gives dir and everything in it to uid (not following links).
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// capBuffer keeps the first limit bytes written and counts the rest.
type capBuffer struct {
	buf     bytes.Buffer
	limit   int
	dropped int
}

func (b *capBuffer) Write(p []byte) (int, error) {
	room := b.limit - b.buf.Len()
	if room >= len(p) {
		return b.buf.Write(p)
	}
	if room > 0 {
		b.buf.Write(p[:room])
	}
	b.dropped += len(p) - max(room, 0)
	return len(p), nil
}

func (b *capBuffer) String() string {
	if b.dropped > 0 {
		return fmt.Sprintf("%s\n[%d more bytes not shown; the output limit is %d bytes]", b.buf.String(), b.dropped, b.limit)
	}
	return b.buf.String()
}

package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names of the workspace tools.
const (
	ListFiles = "list_files"
	ReadFile  = "read_file"
	WriteFile = "write_file"
)

// DefaultMaxFileBytes is the read and write limit when Workspace.MaxFileBytes
// is not set: enough for source files and documents, small enough that a file
// cannot swamp the model's context.
const DefaultMaxFileBytes = 1 << 20

// MaxListEntries bounds one list_files result for the same reason.
const MaxListEntries = 1000

// peersDir is the virtual directory under which peers' workspaces appear. It
// shadows a real directory of that name in the agent's own workspace.
const peersDir = "peers"

// Workspace is the agent's view of the file system during a step: its own
// directory, writable, and its peers' delivered workspaces, read-only under
// peers/<anonymous id>/.
//
// Every access goes through an os.Root opened on the directory concerned, so
// ".." and symbolic links cannot reach outside it, also when the tree changes
// under us; paths are additionally checked lexically first so that the model
// gets a precise error instead of a system one. Symbolic links that stay
// inside are followed when reading, never when writing, and absolute link
// targets are refused even when they point inside (os.Root's rule). Hard links
// and mount points are not detected: whoever prepares Dir and the peers'
// directories must not place them there.
type Workspace struct {
	Dir          string
	Peers        map[string]string // anonymous id ("agent2") → that peer's delivered workspace
	MaxFileBytes int64             // 0 means DefaultMaxFileBytes
	// Limits bound the whole workspace and its paths; zero fields take
	// the defaults.
	Limits WorkspaceLimits
}

func (w Workspace) maxBytes() int64 {
	if w.MaxFileBytes > 0 {
		return w.MaxFileBytes
	}
	return DefaultMaxFileBytes
}

// Specs returns the workspace tools. The descriptions state the limits and the
// peers/ convention so that the model need not discover them by failing.
func (w Workspace) Specs() []Spec {
	limit := w.maxBytes()
	pathProp := stringProp("Path relative to your workspace, with forward slashes, e.g. 'src/main.go' " +
		"or 'peers/agent2/notes.md'.")
	return []Spec{
		{
			Name: ListFiles,
			Description: "List the files under a directory of your workspace, recursively and sorted, " +
				"with sizes; directories end with '/'. Other agents' delivered workspaces are " +
				"read-only under peers/<agent id>/; list 'peers' to see them.",
			Parameters: objectSchema(map[string]any{
				"path": stringProp("Directory or file to list, relative to your workspace; " +
					"omit it to list the whole workspace."),
			}),
		},
		{
			Name: ReadFile,
			Description: fmt.Sprintf("Read a UTF-8 text file from your workspace, or from another "+
				"agent's under peers/<agent id>/. Files over %d bytes are refused.", limit),
			Parameters: objectSchema(map[string]any{"path": pathProp}, "path"),
		},
		{
			Name: WriteFile,
			Description: fmt.Sprintf("Create or replace a file in your workspace with the given "+
				"content, creating parent directories. peers/ is read-only. Content over %d "+
				"bytes is refused; write a larger text as several files.", min(limit, MaxCallBytes)),
			Parameters: objectSchema(map[string]any{
				"path":    pathProp,
				"content": stringProp("The complete new content of the file."),
			}, "path", "content"),
		},
	}
}

// Call runs the workspace tool name with its JSON arguments. handled is false
// when name is not a workspace tool, so the caller can try other tools. A
// refused or failed call is a Result with IsError set, never a Go error: the
// model is expected to read it and correct itself.
func (w Workspace) Call(name, args string) (res Result, handled bool) {
	pathField := field{name: "path", required: true, nonEmpty: true}
	switch name {
	case ListFiles:
		v, err := parseArgs(name, args, field{name: "path"})
		if err != nil {
			return errorResult(err), true
		}
		return w.list(v["path"]), true
	case ReadFile:
		v, err := parseArgs(name, args, pathField)
		if err != nil {
			return errorResult(err), true
		}
		return w.read(v["path"]), true
	case WriteFile:
		v, err := parseArgs(name, args, pathField, field{name: "content", required: true})
		if err != nil {
			return errorResult(err), true
		}
		return w.write(v["path"], v["content"]), true
	}
	return Result{}, false
}

// location is where a model-supplied path points after routing.
type location struct {
	display string // clean path as the model sees it; "." is the workspace root
	dir     string // host directory to open as the root
	rel     string // path inside dir; "." for dir itself
	peer    string // anonymous id when inside a peer's workspace
	peers   bool   // the virtual peers/ directory itself
}

// resolve checks p and routes it to the agent's own workspace, a peer's, or
// the virtual peers/ directory. tool prefixes the error for the model.
func (w Workspace) resolve(tool, p string) (location, error) {
	clean, err := cleanPath(p)
	if err != nil {
		return location{}, fmt.Errorf("%s: %w", tool, err)
	}
	if w.Dir == "" {
		return location{}, fmt.Errorf("%s: this step has no workspace; answer without files", tool)
	}
	loc := location{display: clean, dir: w.Dir, rel: clean}
	first, rest, _ := strings.Cut(clean, "/")
	if first != peersDir {
		return loc, nil
	}
	if rest == "" {
		loc.peers = true
		return loc, nil
	}
	id, inner, _ := strings.Cut(rest, "/")
	dir, ok := w.Peers[id]
	if !ok || dir == "" {
		return location{}, fmt.Errorf("%s: there is no peer %q; %s", tool, id, w.peerHint())
	}
	if inner == "" {
		inner = "."
	}
	return location{display: clean, dir: dir, rel: inner, peer: id}, nil
}

// peerIDs returns the usable peer ids, sorted.
func (w Workspace) peerIDs() []string {
	var ids []string
	for id, dir := range w.Peers {
		if dir != "" && fs.ValidPath(id) && id != "." && !strings.Contains(id, "/") {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// peerHint lists the peers a model may name.
func (w Workspace) peerHint() string {
	ids := w.peerIDs()
	if len(ids) == 0 {
		return "no other agent has delivered a workspace yet"
	}
	return "available peers are " + strings.Join(ids, ", ") + " (under peers/)"
}

// cleanPath checks a model-supplied path lexically and returns it cleaned,
// with "." for the workspace root. It refuses rather than repairs anything
// that suggests the model aims outside the workspace, so the model learns the
// rule instead of having a path silently reinterpreted.
func cleanPath(p string) (string, error) {
	const rule = "paths are relative to your workspace, use forward slashes and stay inside it, e.g. 'notes/plan.md'"
	switch {
	case !utf8.ValidString(p):
		return "", fmt.Errorf("the path is not valid UTF-8; %s", rule)
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return "", fmt.Errorf("the path %q contains a control character; %s", p, rule)
	case strings.Contains(p, `\`):
		return "", fmt.Errorf("the path %q contains a backslash; %s", p, rule)
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("the path %q is absolute; %s", p, rule)
	}
	if p == "" {
		return ".", nil
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("the path %q leads outside your workspace; %s", p, rule)
	}
	return clean, nil
}

// openRoot opens the directory of loc, naming only the model's view of it in
// errors so host paths do not leak into the conversation.
func openRoot(tool string, loc location) (*os.Root, error) {
	r, err := os.OpenRoot(loc.dir)
	if err == nil {
		return r, nil
	}
	if loc.peer != "" {
		return nil, fmt.Errorf("%s: the workspace of peer %s is not available", tool, loc.peer)
	}
	return nil, fmt.Errorf("%s: your workspace is not available", tool)
}

// accessError turns a file system error on display into a message for the
// model. os.Root reports its own error text, such as "path escapes from
// parent", without the host path.
func accessError(tool, display string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %q does not exist; call list_files to see what does", tool, display)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied for %q", tool, display)
	}
	return fmt.Errorf("%s: cannot access %q (%v); paths and symbolic links must stay inside "+
		"the workspace, and symbolic links must be relative", tool, display, err)
}

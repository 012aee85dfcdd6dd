package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sandbox is a temporary tree with the agent's workspace, one peer's
// delivered workspace and a directory outside both holding a secret:
//
//	base/ws/      the agent's workspace
//	base/peer2/   agent2's delivered workspace
//	base/outside/ secret.txt, which no tool may read or change
type sandbox struct {
	base, ws, peer, outside string
	w                       Workspace
}

const secret = "SECRET-OUTSIDE"

func newSandbox(t testing.TB) *sandbox {
	base := t.TempDir()
	s := &sandbox{
		base:    base,
		ws:      filepath.Join(base, "ws"),
		peer:    filepath.Join(base, "peer2"),
		outside: filepath.Join(base, "outside"),
	}
	for _, d := range []string{s.ws, s.peer, s.outside} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(s.outside, "secret.txt"), []byte(secret), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(s.peer, "notes.md"), []byte("peer notes"), 0o644))
	s.w = Workspace{Dir: s.ws, Peers: map[string]string{"agent2": s.peer}}
	return s
}

// call runs a workspace tool with arguments built from key/value pairs.
func (s *sandbox) call(t testing.TB, name string, kv ...string) Result {
	t.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	args, err := json.Marshal(m)
	require.NoError(t, err)
	res, handled := s.w.Call(name, string(args))
	require.True(t, handled)
	return res
}

func (s *sandbox) file(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(s.ws, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func (s *sandbox) secretIntact(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.outside, "secret.txt"))
	require.NoError(t, err)
	assert.Equal(t, secret, string(data))
	entries, err := os.ReadDir(s.outside)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing may be created outside the workspace")
}

func TestWriteThenRead(t *testing.T) {
	s := newSandbox(t)
	res := s.call(t, WriteFile, "path", "a/b/c.txt", "content", "hello\n")
	require.False(t, res.IsError, res.Content)
	assert.Equal(t, "wrote 6 bytes to a/b/c.txt", res.Content)
	info, err := os.Stat(filepath.Join(s.ws, "a", "b"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())

	assert.Equal(t, Result{Content: "hello\n"}, s.call(t, ReadFile, "path", "a/b/c.txt"))
	assert.Equal(t, Result{Content: "hello\n"}, s.call(t, ReadFile, "path", "a/x/../b/c.txt"), "non-escaping .. is cleaned")

	res = s.call(t, WriteFile, "path", "a/b/c.txt", "content", "")
	require.False(t, res.IsError, res.Content)
	assert.Equal(t, Result{Content: ""}, s.call(t, ReadFile, "path", "a/b/c.txt"), "replaced, empty content allowed")

	entries, err := os.ReadDir(filepath.Join(s.ws, "a", "b"))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left behind")
}

func TestListFiles(t *testing.T) {
	s := newSandbox(t)
	s.file(t, "b.txt", "bb")
	s.file(t, "a/z.txt", "z")
	s.file(t, "a-b.txt", "")
	s.file(t, "peers/shadowed.txt", "own peers/ is hidden by the virtual one")
	require.NoError(t, os.Mkdir(filepath.Join(s.ws, "empty"), 0o755))

	want := "a/\na/z.txt (1 bytes)\na-b.txt (0 bytes)\nb.txt (2 bytes)\nempty/\npeers/\npeers/agent2/\n" +
		"(peers/<agent id>/ hold other agents' workspaces, read-only; list one to see its files)\n"
	assert.Equal(t, Result{Content: want}, s.call(t, ListFiles))
	res, _ := s.w.Call(ListFiles, "")
	assert.Equal(t, want, res.Content, "empty arguments list the root")

	assert.Equal(t, Result{Content: "a/z.txt (1 bytes)\n"}, s.call(t, ListFiles, "path", "a"))
	assert.Equal(t, Result{Content: "b.txt (2 bytes)\n"}, s.call(t, ListFiles, "path", "b.txt"))
	assert.Equal(t, Result{Content: "(no files)\n"}, s.call(t, ListFiles, "path", "empty"))
	assert.Equal(t, Result{Content: "peers/agent2/\npeers/agent2/notes.md (10 bytes)\n"}, s.call(t, ListFiles, "path", "peers"))
	assert.Equal(t, Result{Content: "peers/agent2/notes.md (10 bytes)\n"}, s.call(t, ListFiles, "path", "peers/agent2"))

	res = s.call(t, ListFiles, "path", "nope")
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, `"nope" does not exist`)
}

func TestListFilesTruncates(t *testing.T) {
	s := newSandbox(t)
	for i := range MaxListEntries + 5 {
		s.file(t, fmt.Sprintf("f%04d", i), "")
	}
	res := s.call(t, ListFiles)
	require.False(t, res.IsError)
	lines := strings.Split(strings.TrimSpace(res.Content), "\n")
	assert.Len(t, lines, MaxListEntries+2) // entries, truncation note, peers note
	assert.Contains(t, res.Content, "listing truncated at 1000 entries")
}

func TestPeers(t *testing.T) {
	s := newSandbox(t)
	assert.Equal(t, Result{Content: "peer notes"}, s.call(t, ReadFile, "path", "peers/agent2/notes.md"))

	for _, p := range []string{"peers/agent2/notes.md", "peers/agent2/new.md", "peers/x", "peers", "peers/agent9/x"} {
		res := s.call(t, WriteFile, "path", p, "content", "overwritten")
		assert.True(t, res.IsError, p)
		assert.Contains(t, res.Content, "peers/ is read-only", p)
	}
	data, err := os.ReadFile(filepath.Join(s.peer, "notes.md"))
	require.NoError(t, err)
	assert.Equal(t, "peer notes", string(data))
	entries, _ := os.ReadDir(s.peer)
	assert.Len(t, entries, 1)

	res := s.call(t, ReadFile, "path", "peers/agent9/notes.md")
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, `there is no peer "agent9"; available peers are agent2`)

	s.w.Peers = nil
	res = s.call(t, ListFiles, "path", "peers/agent2")
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "no other agent has delivered a workspace yet")

	s.w.Peers = map[string]string{"agent3": filepath.Join(s.base, "missing")}
	res = s.call(t, ReadFile, "path", "peers/agent3/x")
	assert.Equal(t, Result{Content: "read_file: the workspace of peer agent3 is not available", IsError: true}, res)
}

func TestRefusedPaths(t *testing.T) {
	s := newSandbox(t)
	s.file(t, "a/inside.txt", "ok")
	cases := []struct{ path, want string }{
		{"../outside/secret.txt", "leads outside your workspace"},
		{"..", "leads outside your workspace"},
		{"a/../../outside/secret.txt", "leads outside your workspace"},
		{"peers/agent2/../../../outside/secret.txt", "leads outside your workspace"},
		{"/etc/passwd", "is absolute"},
		{filepath.Join(s.outside, "secret.txt"), "is absolute"},
		{`a\inside.txt`, "contains a backslash"},
		{`..\outside\secret.txt`, "contains a backslash"},
		{"a/inside.txt\x00.png", "control character"},
		{"a\nb", "control character"},
		{"a\u0085b", "control character"},
	}
	for _, c := range cases {
		for _, tool := range []string{ReadFile, WriteFile, ListFiles} {
			t.Run(tool+" "+c.path, func(t *testing.T) {
				kv := []string{"path", c.path}
				if tool == WriteFile {
					kv = append(kv, "content", "x")
				}
				res := s.call(t, tool, kv...)
				assert.True(t, res.IsError)
				assert.Contains(t, res.Content, c.want)
				assert.Contains(t, res.Content, "paths are relative to your workspace")
				assert.NotContains(t, res.Content, secret)
			})
		}
	}
	s.secretIntact(t)

	// Invalid UTF-8 cannot arrive through JSON (it decodes to U+FFFD), but
	// the path check does not rely on that.
	_, err := cleanPath("bad\xffutf8")
	assert.ErrorContains(t, err, "not valid UTF-8")
}

func TestSymlinks(t *testing.T) {
	s := newSandbox(t)
	s.file(t, "real.txt", "real")
	link := func(target, name string) { require.NoError(t, os.Symlink(target, filepath.Join(s.ws, name))) }
	link("../outside/secret.txt", "out.txt")
	link("../outside", "outdir")
	link(filepath.Join(s.ws, "real.txt"), "abs-in.txt")
	link("real.txt", "in.txt")
	require.NoError(t, os.Symlink("../outside/secret.txt", filepath.Join(s.peer, "peer-out.txt")))

	for _, p := range []string{"out.txt", "outdir/secret.txt", "peers/agent2/peer-out.txt"} {
		res := s.call(t, ReadFile, "path", p)
		assert.True(t, res.IsError, p)
		assert.Contains(t, res.Content, "must stay inside the workspace", p)
		assert.NotContains(t, res.Content, secret)
	}
	res := s.call(t, ListFiles, "path", "outdir")
	assert.True(t, res.IsError)
	assert.NotContains(t, res.Content, "secret.txt")

	// Links inside the workspace may be read through when relative, as
	// os.Root allows; absolute link targets are refused even when inside.
	assert.Equal(t, Result{Content: "real"}, s.call(t, ReadFile, "path", "in.txt"))
	assert.True(t, s.call(t, ReadFile, "path", "abs-in.txt").IsError)

	// Writes never go through a link, wherever it points.
	for _, p := range []string{"out.txt", "outdir/secret.txt", "outdir/new.txt", "in.txt", "abs-in.txt"} {
		res := s.call(t, WriteFile, "path", p, "content", "overwritten")
		assert.True(t, res.IsError, p)
		assert.Contains(t, res.Content, "is a symbolic link", p)
	}
	assert.Equal(t, Result{Content: "real"}, s.call(t, ReadFile, "path", "real.txt"))
	s.secretIntact(t)

	res = s.call(t, ListFiles)
	assert.Contains(t, res.Content, "outdir (symlink)\n")
	assert.NotContains(t, res.Content, "secret")
}

func TestSizeLimits(t *testing.T) {
	s := newSandbox(t)
	s.w.MaxFileBytes = 10
	s.file(t, "ten.txt", "0123456789")
	s.file(t, "eleven.txt", "0123456789a")

	assert.Equal(t, Result{Content: "0123456789"}, s.call(t, ReadFile, "path", "ten.txt"))
	res := s.call(t, ReadFile, "path", "eleven.txt")
	assert.Equal(t, Result{Content: `read_file: "eleven.txt" is 11 bytes, over the 10-byte read limit`, IsError: true}, res)

	assert.False(t, s.call(t, WriteFile, "path", "w.txt", "content", "0123456789").IsError)
	res = s.call(t, WriteFile, "path", "w2.txt", "content", "0123456789a")
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content, "the content is 11 bytes, over the 10-byte limit")
	assert.NoFileExists(t, filepath.Join(s.ws, "w2.txt"))

	assert.Contains(t, s.w.Specs()[1].Description, "Files over 10 bytes are refused")
	assert.Equal(t, int64(DefaultMaxFileBytes), Workspace{}.maxBytes())
}

func TestReadAndWriteErrors(t *testing.T) {
	s := newSandbox(t)
	s.file(t, "dir/f.txt", "f")
	s.file(t, "bin", "\xff\xfe")
	cases := []struct {
		tool, args, want string
	}{
		{ReadFile, `{"path": "dir"}`, `"dir" is a directory; call list_files on it instead`},
		{ReadFile, `{"path": "peers"}`, `"peers" is a directory`},
		{ReadFile, `{"path": "peers/agent2"}`, `"peers/agent2" is a directory`},
		{ReadFile, `{"path": "missing.txt"}`, `"missing.txt" does not exist; call list_files`},
		{ReadFile, `{"path": "bin"}`, "is not UTF-8 text"},
		{ReadFile, `{"path": ""}`, `field "path" is empty`},
		{ReadFile, `{}`, `required field "path" is missing`},
		{ReadFile, `{"path": 1}`, `must be a JSON string, not a number`},
		{ReadFile, `{"path": "a", "offset": 3}`, `unknown field "offset"`},
		{WriteFile, `{"path": "x.txt"}`, `required field "content" is missing`},
		{WriteFile, `{"path": "dir", "content": "x"}`, `"dir" is a directory`},
		{WriteFile, `{"path": "new/", "content": "x"}`, `names a directory`},
		{WriteFile, `{"path": ".", "content": "x"}`, `names a directory`},
		{WriteFile, `{"path": "dir/f.txt/g.txt", "content": "x"}`, `"dir/f.txt" is a file, so it cannot contain`},
		{ListFiles, `{"path": 3}`, `call list_files again with arguments {"path": "<string, optional>"}`},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.args, func(t *testing.T) {
			res, handled := s.w.Call(c.tool, c.args)
			require.True(t, handled)
			assert.True(t, res.IsError)
			assert.Contains(t, res.Content, c.want)
		})
	}

	_, handled := s.w.Call(Vote, `{}`)
	assert.False(t, handled, "workflow tools are not workspace tools")

	res, _ := Workspace{}.Call(ReadFile, `{"path": "a"}`)
	assert.Equal(t, Result{Content: "read_file: this step has no workspace; answer without files", IsError: true}, res)
}

func TestWorkspaceSpecs(t *testing.T) {
	specs := Workspace{}.Specs()
	require.Len(t, specs, 3)
	want := map[string][]string{ListFiles: {}, ReadFile: {"path"}, WriteFile: {"path", "content"}}
	for _, s := range specs {
		assert.Equal(t, want[s.Name], s.Parameters["required"], s.Name)
		assert.False(t, IsWorkflowTool(s.Name))
		_, err := json.Marshal(s.Parameters)
		require.NoError(t, err)
	}
}

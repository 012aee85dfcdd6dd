package tools

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzWorkspacePath throws arbitrary paths at every workspace tool and checks
// that nothing outside the workspace is ever read or changed: not the secret
// beside it (reachable by .., absolute paths and symbolic links planted in the
// workspace and in the peer's), and not the read-only peer workspace.
func FuzzWorkspacePath(f *testing.F) {
	s := newSandbox(f)
	for name, target := range map[string]string{
		"out.txt":    "../outside/secret.txt",
		"outdir":     "../outside",
		"abs.txt":    filepath.Join(s.outside, "secret.txt"),
		"absdir":     s.outside,
		"peerdir":    "../peer2",
		"loop":       "loop",
		"sub/up.txt": "../../outside/secret.txt",
	} {
		p := filepath.Join(s.ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Symlink("../outside", filepath.Join(s.peer, "out")); err != nil {
		f.Fatal(err)
	}
	outside := snapshot(f, s.base, "ws")

	for _, p := range []string{
		"", ".", "..", "../outside/secret.txt", "a/../../outside/secret.txt", "/etc/passwd",
		s.outside + "/secret.txt", `..\outside\secret.txt`, "out.txt", "outdir/secret.txt",
		"outdir/new.txt", "abs.txt", "absdir/secret.txt", "peerdir/notes.md", "sub/up.txt",
		"loop/x", "peers", "peers/agent2", "peers/agent2/notes.md", "peers/agent2/out/secret.txt",
		"peers/agent2/../../outside/secret.txt", "peers/../../outside/secret.txt", "peers/agent3/x",
		"new/dir/file.txt", "./x", "x/", "x//y", "%2e%2e/outside", "\x00", "…/x",
	} {
		for op := range 3 {
			f.Add(uint8(op), p)
		}
	}

	f.Fuzz(func(t *testing.T, op uint8, p string) {
		var name string
		args := map[string]string{"path": p}
		switch op % 3 {
		case 0:
			name = ListFiles
		case 1:
			name = ReadFile
		case 2:
			name, args["content"] = WriteFile, "FUZZED"
		}
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		res, handled := s.w.Call(name, string(raw))
		if !handled {
			t.Fatalf("%s not handled", name)
		}
		// The fuzzer may create its own secret.txt inside the workspace, but
		// it always writes "FUZZED", so only the real one has secret's size.
		if strings.Contains(res.Content, secret) || strings.Contains(res.Content, fmt.Sprintf("secret.txt (%d bytes)", len(secret))) {
			t.Fatalf("%s %q exposed the secret: %q", name, p, res.Content)
		}
		// Echoing the model's own path back is fine; revealing one is not.
		if strings.Contains(res.Content, s.base) && !strings.Contains(p, s.base) {
			t.Fatalf("%s %q leaked a host path: %q", name, p, res.Content)
		}
		if got := snapshot(t, s.base, "ws"); got != outside {
			t.Fatalf("%s %q changed something outside the workspace:\n%s\nwant:\n%s", name, p, got, outside)
		}
		if name == WriteFile && !res.IsError {
			// The file written must be a regular file inside the workspace.
			// Use the path as the tool decoded it: JSON turns each invalid
			// UTF-8 byte into U+FFFD.
			var sent map[string]string
			if err := json.Unmarshal(raw, &sent); err != nil {
				t.Fatal(err)
			}
			clean, err := cleanPath(sent["path"])
			if err != nil {
				t.Fatalf("write to %q succeeded but the path is invalid: %v", p, err)
			}
			info, err := os.Lstat(filepath.Join(s.ws, filepath.FromSlash(clean)))
			if err != nil || !info.Mode().IsRegular() {
				t.Fatalf("write to %q succeeded but %q is not a regular file in the workspace: %v", p, clean, err)
			}
		}
	})
}

// snapshot describes every entry under base except the directory skip, with
// modes, link targets and content hashes, so any change shows as a diff.
func snapshot(t testing.TB, base, skip string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		if rel == skip {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v", rel, info.Mode())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", target)
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// FuzzParseVote checks that vote parsing never panics and that whatever it
// accepts obeys the documented limits and survives a round trip.
func FuzzParseVote(f *testing.F) {
	for _, s := range []string{
		`{"agent_id": "agent2", "reason": "best"}`, `{"agent_id": "agent2.3", "reason": "r"}`,
		`{"agent_id": 2, "reason": "r"}`, `{"agent_id": "", "reason": ""}`, `{}`, ``, `null`, `[]`,
		`{"agent_id": "a", "reason": "r"} x`, `{"agent_id": "a", "agent_id": "b", "reason": "r"}`,
		`{"AGENT_ID": "a", "reason": "r"}`, `{"agent_id": "a\u0000", "reason": "\ud800"}`, `{"a":{"b":[1,{"c":null}]}}`,
		`{"agent_id": "a", "reason": "r"`, `{"agent_id": "a", "reason": "r",}`, "\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		id, reason, err := ParseVote(args)
		if err != nil {
			if id != "" || reason != "" {
				t.Fatalf("values returned with an error: %q %q", id, reason)
			}
			if !strings.HasPrefix(err.Error(), "vote: ") {
				t.Fatalf("error not addressed to the vote call: %v", err)
			}
			return
		}
		if strings.TrimSpace(id) == "" || strings.TrimSpace(reason) == "" {
			t.Fatalf("accepted empty values: %q %q", id, reason)
		}
		if len(id) > 64 || len(reason) > MaxReasonBytes {
			t.Fatalf("accepted oversize values: %d %d", len(id), len(reason))
		}
		if !utf8.ValidString(id) || !utf8.ValidString(reason) {
			t.Fatalf("returned invalid UTF-8: %q %q", id, reason)
		}
		again, err := json.Marshal(map[string]string{"agent_id": id, "reason": reason})
		if err != nil {
			t.Fatal(err)
		}
		id2, reason2, err := ParseVote(string(again))
		if err != nil || id2 != id || reason2 != reason {
			t.Fatalf("round trip of %q: %q %q %v", again, id2, reason2, err)
		}
	})
}

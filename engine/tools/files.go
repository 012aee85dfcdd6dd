package tools

import (
	"crypto/rand"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// list renders the tree under p, one entry per line, as paths the model can
// pass straight back to read_file.
func (w Workspace) list(p string) Result {
	loc, err := w.resolve(ListFiles, p)
	if err != nil {
		return errorResult(err)
	}
	var lines []string
	truncated := false
	switch {
	case loc.peers:
		for _, id := range w.peerIDs() {
			sub := location{display: path.Join(peersDir, id), dir: w.Peers[id], rel: ".", peer: id}
			more, t, err := walk(sub)
			if err != nil {
				lines = append(lines, sub.display+"/ (unavailable)")
				continue
			}
			lines = append(lines, sub.display+"/")
			lines = append(lines, more...)
			truncated = truncated || t
		}
	default:
		lines, truncated, err = walk(loc)
		if err != nil {
			return errorResult(err)
		}
		if loc.display == "." {
			// The agent's own peers/ is shadowed; show the virtual one
			// without its contents, which can be large and are one call away.
			lines = dropShadowed(lines)
			if ids := w.peerIDs(); len(ids) > 0 {
				lines = append(lines, peersDir+"/")
				for _, id := range ids {
					lines = append(lines, peersDir+"/"+id+"/")
				}
			}
		}
	}
	sort.Slice(lines, func(i, j int) bool { return treeKey(lines[i]) < treeKey(lines[j]) })
	if len(lines) > MaxListEntries {
		lines, truncated = lines[:MaxListEntries], true
	}
	var b strings.Builder
	if len(lines) == 0 {
		b.WriteString("(no files)\n")
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if truncated {
		fmt.Fprintf(&b, "(listing truncated at %d entries; list a subdirectory to see more)\n", MaxListEntries)
	}
	if loc.display == "." && len(w.peerIDs()) > 0 {
		b.WriteString("(peers/<agent id>/ hold other agents' workspaces, read-only; list one to see its files)\n")
	}
	return Result{Content: b.String()}
}

// dropShadowed drops the agent's own peers/ entries from a root
// listing.
func dropShadowed(lines []string) []string {
	out := lines[:0]
	for _, l := range lines {
		if !strings.HasPrefix(l, peersDir+"/") && !strings.HasPrefix(l, peersDir+" ") {
			out = append(out, l)
		}
	}
	return out
}

// treeKey orders paths as a tree: a directory's entries right after it, before
// siblings that merely share a prefix ("a/" and "a/b" before "a-b").
func treeKey(line string) string {
	return strings.ReplaceAll(line, "/", "\x00")
}

// walk lists loc recursively, stopping after MaxListEntries+1 entries.
// Symbolic links are listed, not followed, and their targets are not shown.
func walk(loc location) (lines []string, truncated bool, err error) {
	r, err := openRoot(ListFiles, loc)
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	prefix := ""
	if loc.peer != "" {
		prefix = path.Join(peersDir, loc.peer)
	}
	show := func(p string) string { return path.Join(prefix, p) }
	err = fs.WalkDir(r.FS(), loc.rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == loc.rel {
				return accessError(ListFiles, loc.display, err)
			}
			lines = append(lines, show(p)+"/ (unreadable)")
			return nil
		}
		if p == loc.rel && d.IsDir() {
			return nil // the directory asked for is not part of its own listing
		}
		if len(lines) >= MaxListEntries+1 {
			truncated = true
			return fs.SkipAll
		}
		switch t := d.Type(); {
		case t.IsDir():
			lines = append(lines, show(p)+"/")
		case t&fs.ModeSymlink != 0:
			lines = append(lines, show(p)+" (symlink)")
		case t.IsRegular():
			size := int64(0)
			if info, err := d.Info(); err == nil {
				size = info.Size()
			}
			lines = append(lines, fmt.Sprintf("%s (%d bytes)", show(p), size))
		default:
			lines = append(lines, show(p)+" (special file)")
		}
		return nil
	})
	return lines, truncated, err
}

// read returns the content of a regular UTF-8 file of at most maxBytes.
func (w Workspace) read(p string) Result {
	loc, err := w.resolve(ReadFile, p)
	if err != nil {
		return errorResult(err)
	}
	if loc.peers {
		return errorResult(fmt.Errorf("%s: %q is a directory; call list_files on it instead", ReadFile, p))
	}
	r, err := openRoot(ReadFile, loc)
	if err != nil {
		return errorResult(err)
	}
	defer r.Close()
	limit := w.maxBytes()
	// Stat before Open: opening a FIFO or device could block or never end.
	info, err := r.Stat(loc.rel)
	if err != nil {
		return errorResult(accessError(ReadFile, loc.display, err))
	}
	if err := readable(loc.display, info, limit); err != nil {
		return errorResult(err)
	}
	f, err := r.Open(loc.rel)
	if err != nil {
		return errorResult(accessError(ReadFile, loc.display, err))
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return errorResult(accessError(ReadFile, loc.display, err))
	}
	if err := readable(loc.display, info, limit); err != nil { // replaced meanwhile
		return errorResult(err)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return errorResult(accessError(ReadFile, loc.display, err))
	}
	if int64(len(data)) > limit { // grew meanwhile
		return errorResult(fmt.Errorf("%s: %q is over the %d-byte read limit", ReadFile, loc.display, limit))
	}
	if !utf8.Valid(data) {
		return errorResult(fmt.Errorf("%s: %q is not UTF-8 text; only text files can be read", ReadFile, loc.display))
	}
	return Result{Content: string(data)}
}

// readable refuses directories, special files and files over limit.
func readable(display string, info fs.FileInfo, limit int64) error {
	switch {
	case info.IsDir():
		return fmt.Errorf("%s: %q is a directory; call list_files on it instead", ReadFile, display)
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s: %q is not a regular file", ReadFile, display)
	case info.Size() > limit:
		return fmt.Errorf("%s: %q is %d bytes, over the %d-byte read limit", ReadFile, display, info.Size(), limit)
	}
	return nil
}

// write replaces the file at p with content atomically: it writes a temporary
// file in the same directory and renames it into place, so a reader (a peer
// copying this workspace, or a retried step) never sees half a file.
func (w Workspace) write(p, content string) Result {
	// Refuse all of peers/ before routing, so that an unknown peer gets
	// the same answer as a known one: nothing there is writable.
	if clean, err := cleanPath(p); err == nil && (clean == peersDir || strings.HasPrefix(clean, peersDir+"/")) {
		return errorResult(fmt.Errorf("%s: peers/ is read-only (it holds other agents' workspaces); "+
			"write to a path outside peers/, e.g. 'notes.md'", WriteFile))
	}
	loc, err := w.resolve(WriteFile, p)
	if err != nil {
		return errorResult(err)
	}
	switch {
	case loc.peers || loc.peer != "": // unreachable; kept so a routing change cannot open peers/
		return errorResult(fmt.Errorf("%s: peers/ is read-only", WriteFile))
	case loc.rel == "." || strings.HasSuffix(p, "/"):
		return errorResult(fmt.Errorf("%s: %q names a directory; pass a file path such as 'notes.md'", WriteFile, p))
	}
	limit := w.maxBytes()
	if int64(len(content)) > limit {
		return errorResult(fmt.Errorf("%s: the content is %d bytes, over the %d-byte limit; "+
			"split it into smaller files", WriteFile, len(content), limit))
	}
	lim := w.Limits.withDefaults()
	if err := lim.checkPath(loc.rel); err != nil {
		return errorResult(err)
	}
	r, err := openRoot(WriteFile, loc)
	if err != nil {
		return errorResult(err)
	}
	defer r.Close()
	if err := writable(r, loc.rel); err != nil {
		return errorResult(err)
	}
	if err := lim.checkRoom(r, loc.rel, int64(len(content))); err != nil {
		return errorResult(err)
	}
	dir := path.Dir(loc.rel)
	if err := r.MkdirAll(dir, 0o755); err != nil {
		return errorResult(accessError(WriteFile, dir, err))
	}
	tmp := path.Join(dir, ".conclave-tmp-"+rand.Text())
	if err := writeNew(r, tmp, content); err != nil {
		_ = r.Remove(tmp)
		return errorResult(accessError(WriteFile, loc.display, err))
	}
	if err := r.Rename(tmp, loc.rel); err != nil {
		_ = r.Remove(tmp)
		return errorResult(accessError(WriteFile, loc.display, err))
	}
	return Result{Content: fmt.Sprintf("wrote %d bytes to %s", len(content), loc.display)}
}

// writable walks the components of rel without following links: a write must
// not go through a symbolic link even one that stays inside, since its target
// may be shared with another path the agent did not mean to change.
func writable(r *os.Root, rel string) error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		info, err := r.Lstat(p)
		if err != nil {
			if os.IsNotExist(err) {
				return nil // this and the rest will be created
			}
			return accessError(WriteFile, p, err)
		}
		last := i == len(parts)-1
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: %q is a symbolic link; write_file does not write through links, "+
				"choose another path", WriteFile, p)
		case !last && !info.IsDir():
			return fmt.Errorf("%s: %q is a file, so it cannot contain %q", WriteFile, p, rel)
		case last && info.IsDir():
			return fmt.Errorf("%s: %q is a directory; pass a file path inside it", WriteFile, p)
		case last && !info.Mode().IsRegular():
			return fmt.Errorf("%s: %q is not a regular file", WriteFile, p)
		}
	}
	return nil
}

// writeNew creates name, which must not exist, with content.
func writeNew(r *os.Root, name, content string) error {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, content); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

package tools

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Defaults of WorkspaceLimits: room for a real project's sources and
// documents, far below what would fill a worker's disk or a bucket when
// every session on a worker writes at once.
const (
	DefaultWorkspaceFiles = 1000
	DefaultWorkspaceBytes = 32 << 20
	// DefaultPathBytes and DefaultPathDepth keep a file's storage key
	// (session prefix, agents/<id>/<NNN>/workspace/, path) well under
	// S3's 1,024 bytes.
	DefaultPathBytes = 512
	DefaultPathDepth = 32
)

// WorkspaceLimits bound what a step's model can put in its workspace: the
// files and bytes of the whole workspace (what is stored with its answer),
// and each path's length and depth. They are checked when a file is
// written, so the model is told at once and can change course, instead of
// the step failing when its workspace is stored.
type WorkspaceLimits struct {
	Files     int
	Bytes     int64
	PathBytes int
	PathDepth int
}

func (l WorkspaceLimits) withDefaults() WorkspaceLimits {
	if l.Files <= 0 {
		l.Files = DefaultWorkspaceFiles
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultWorkspaceBytes
	}
	if l.PathBytes <= 0 {
		l.PathBytes = DefaultPathBytes
	}
	if l.PathDepth <= 0 {
		l.PathDepth = DefaultPathDepth
	}
	return l
}

func (l WorkspaceLimits) checkPath(rel string) error {
	if len(rel) > l.PathBytes {
		return fmt.Errorf("%s: the path is %d bytes, over the %d-byte limit for a path; use a shorter one", WriteFile, len(rel), l.PathBytes)
	}
	if depth := strings.Count(rel, "/") + 1; depth > l.PathDepth {
		return fmt.Errorf("%s: the path is %d levels deep, over the limit of %d; use fewer directories", WriteFile, depth, l.PathDepth)
	}
	return nil
}

// checkRoom refuses a write of size bytes to rel that would take the
// workspace under r over its files or bytes; a file replaced gives its
// room back.
func (l WorkspaceLimits) checkRoom(r *os.Root, rel string, size int64) error {
	files, bytes := 0, int64(0)
	var replaced int64 = -1
	err := fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if p == rel {
			replaced = info.Size()
			return nil
		}
		files++
		bytes += info.Size()
		return nil
	})
	if err != nil {
		return accessError(WriteFile, ".", err)
	}
	if files+1 > l.Files && replaced < 0 {
		return fmt.Errorf("%s: your workspace holds %d files, the limit for one step is %d; the file was not written. "+
			"Put more in fewer files, or replace a file you wrote", WriteFile, files, l.Files)
	}
	if bytes+size > l.Bytes {
		return fmt.Errorf("%s: with this file your workspace would hold %d bytes, over the %d-byte limit for one step; "+
			"the file was not written. Write less, or replace a larger file with a shorter one", WriteFile, bytes+size, l.Bytes)
	}
	return nil
}

package storage

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// MaxTreeFileSize bounds each file PutDir uploads. Workspaces hold an
// agent's deliverables, not datasets; a larger file is almost always a
// mistake (a build cache, a core dump) and would be held in memory whole.
const MaxTreeFileSize = 64 << 20

// PutDir uploads every regular file under localDir to prefix + its
// slash-separated relative path, e.g. to publish an agent's workspace.
// Symlinks and other special files are skipped rather than followed, so a
// workspace cannot smuggle in files from elsewhere on the machine.
func PutDir(ctx context.Context, s Store, prefix, localDir string) error {
	if err := validPrefix(prefix); err != nil {
		return err
	}
	root, err := os.OpenRoot(localDir)
	if err != nil {
		return fmt.Errorf("storage: upload directory %q: %w; check that it exists", localDir, err)
	}
	defer root.Close()
	fsys := root.FS()
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("storage: upload directory %q: %w", localDir, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil // directories are walked; symlinks and devices skipped
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("storage: upload %q from %q: %w", p, localDir, err)
		}
		if info.Size() > MaxTreeFileSize {
			return fmt.Errorf("storage: upload %q from %q: %d bytes exceeds the %d-byte limit per file; remove it or move it out of the directory", p, localDir, info.Size(), MaxTreeFileSize)
		}
		key := prefix + p
		if err := ValidKey(key); err != nil {
			return fmt.Errorf("storage: upload %q from %q: %w", p, localDir, err)
		}
		data, err := readLimited(root, p)
		if err != nil {
			return fmt.Errorf("storage: upload %q from %q: %w", p, localDir, err)
		}
		return s.Put(ctx, key, data)
	})
}

// readLimited reads a file that may have grown since it was measured,
// refusing it rather than reading without bound.
func readLimited(root *os.Root, name string) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxTreeFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxTreeFileSize {
		return nil, fmt.Errorf("file grew past the %d-byte limit while being read", MaxTreeFileSize)
	}
	return data, nil
}

// GetDir downloads every key under prefix into localDir, recreating the
// tree, e.g. to materialise a peer's workspace for an agent. Each relative
// key is validated and written through a Local store, so no key can place a
// file outside localDir or through a symlink inside it.
func GetDir(ctx context.Context, s Store, prefix, localDir string) error {
	dst, err := NewLocal(localDir)
	if err != nil {
		return err
	}
	return copyTree(ctx, s, prefix, dst, "")
}

// CopyPrefix copies every key under from to the same relative key under to,
// within one store, e.g. promoting the winner's workspace to
// final/workspace/. Keys are listed before copying, so copying a prefix into
// a sub-prefix of itself terminates.
func CopyPrefix(ctx context.Context, s Store, from, to string) error {
	if err := validPrefix(to); err != nil {
		return err
	}
	return copyTree(ctx, s, from, s, to)
}

func copyTree(ctx context.Context, src Store, from string, dst Store, to string) error {
	if err := validPrefix(from); err != nil {
		return err
	}
	keys, err := src.List(ctx, from)
	if err != nil {
		return err
	}
	for _, k := range keys {
		rel := strings.TrimPrefix(k, from)
		if err := ValidKey(rel); err != nil {
			return fmt.Errorf("storage: copy %s/%s to %s/%s: %w", src.Location(), from, dst.Location(), to, err)
		}
		data, err := src.Get(ctx, k)
		if err != nil {
			return err
		}
		if err := dst.Put(ctx, to+rel, data); err != nil {
			return err
		}
	}
	return nil
}

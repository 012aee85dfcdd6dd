package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// tmpPrefix starts the name of every file Local writes before renaming it
// into place. List skips such files and Put refuses keys that use it, so a
// half-written value is never visible as a key.
const tmpPrefix = ".tmp-"

// Local is a Store over a directory: the development and single-machine
// backend. It never traverses symbolic links, so nothing placed inside the
// directory can redirect reads or writes outside it.
type Local struct {
	dir string
}

var _ Store = (*Local)(nil)

// NewLocal returns a store rooted at dir, creating the directory if needed.
// dir is made absolute so Location stays meaningful after a chdir.
func NewLocal(dir string) (*Local, error) {
	if dir == "" {
		return nil, errors.New("storage: empty local directory; pass a directory path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: resolve local directory %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("storage: create local directory %q: %w; check the path and its permissions", abs, err)
	}
	return &Local{dir: abs}, nil
}

// Location returns the absolute directory path.
func (l *Local) Location() string { return l.dir }

// open returns an os.Root for the store directory. It is opened per call
// because Store has no Close; the root confines every path operation even
// if a symlink appears between our checks and our use.
func (l *Local) open() (*os.Root, error) {
	r, err := os.OpenRoot(l.dir)
	if err != nil {
		return nil, fmt.Errorf("storage: open local directory %q: %w; was it removed?", l.dir, err)
	}
	return r, nil
}

// checkKey validates key and refuses names reserved for temporary files.
func checkKey(key string) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	for elem := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(elem, tmpPrefix) {
			return fmt.Errorf("storage: invalid key %q: names starting with %q are reserved for in-progress writes; rename the file", key, tmpPrefix)
		}
	}
	return nil
}

// noSymlinkParents fails if any directory on the way to key is a symlink.
// Missing directories are fine: the caller handles absence.
func noSymlinkParents(r *os.Root, key string) error {
	elems := strings.Split(key, "/")
	for i := 1; i < len(elems); i++ {
		dir := strings.Join(elems[:i], "/")
		fi, err := r.Lstat(dir)
		if err != nil {
			return nil
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("storage: key %q: %q is a symbolic link, which local stores refuse to follow; replace it with a directory", key, dir)
		}
	}
	return nil
}

// notFound reports whether err means the path does not exist, including a
// file standing where a parent directory was expected.
func notFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// Put writes data to a temporary file in the key's directory, syncs it and
// renames it over the key, so readers see the old value or the new one.
func (l *Local) Put(ctx context.Context, key string, data []byte) error {
	return l.write(ctx, "put", key, data, func(r *os.Root, tmp string) error {
		if err := r.Rename(tmp, key); err != nil {
			return fmt.Errorf("storage: put %q in %s: rename into place: %w; is a directory in the way?", key, l.dir, err)
		}
		return nil
	})
}

// Create writes a temporary file like Put and hard-links it to the key:
// link(2) fails if the key exists, so exactly one of concurrent Creates
// wins, and the value appears whole.
func (l *Local) Create(ctx context.Context, key string, data []byte) error {
	return l.write(ctx, "create", key, data, func(r *os.Root, tmp string) error {
		err := r.Link(tmp, key)
		_ = r.Remove(tmp)
		switch {
		case errors.Is(err, fs.ErrExist):
			return fmt.Errorf("storage: create %q in %s: %w", key, l.dir, ErrExists)
		case err != nil:
			return fmt.Errorf("storage: create %q in %s: link into place: %w", key, l.dir, err)
		}
		return nil
	})
}

// write stores data in a synced temporary file next to key and lets place
// move it there; the temporary file is removed if anything fails.
func (l *Local) write(ctx context.Context, op, key string, data []byte, place func(r *os.Root, tmp string) error) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := l.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if err := noSymlinkParents(r, key); err != nil {
		return err
	}
	dir := path.Dir(key)
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := path.Join(dir, tmpPrefix+hex.EncodeToString(suffix[:]))
	// A concurrent Delete may prune a directory while MkdirAll creates the
	// ones below it, or between MkdirAll and the create; retrying a few
	// times makes that race harmless.
	var f *os.File
	for attempt := 0; ; attempt++ {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
				continue
			}
			return fmt.Errorf("storage: %s %q in %s: create directory: %w", op, key, l.dir, err)
		}
		f, err = r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || attempt == 3 {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("storage: %s %q in %s: %w", op, key, l.dir, err)
	}
	cleanup := func() { _ = r.Remove(tmp) }
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		cleanup()
		return fmt.Errorf("storage: %s %q in %s: write: %w; is the disk full?", op, key, l.dir, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		cleanup()
		return fmt.Errorf("storage: %s %q in %s: sync: %w", op, key, l.dir, err)
	}
	if err := f.Close(); err != nil {
		cleanup()
		return fmt.Errorf("storage: %s %q in %s: close: %w", op, key, l.dir, err)
	}
	if err := place(r, tmp); err != nil {
		cleanup()
		return err
	}
	// Persist the new name; failure here only weakens durability.
	if d, err := r.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// Get reads key. Directories and missing paths both count as not found, as
// they would on S3; symlinks are refused rather than followed.
func (l *Local) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := l.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := noSymlinkParents(r, key); err != nil {
		return nil, err
	}
	fi, err := r.Lstat(key)
	switch {
	case notFound(err):
		return nil, fmt.Errorf("storage: get %q from %s: %w", key, l.dir, ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("storage: get %q from %s: %w", key, l.dir, err)
	case fi.IsDir():
		return nil, fmt.Errorf("storage: get %q from %s: is a directory: %w", key, l.dir, ErrNotFound)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("storage: get %q from %s: not a regular file (symlinks are refused); replace it with a plain file", key, l.dir)
	}
	data, err := r.ReadFile(key)
	if notFound(err) {
		return nil, fmt.Errorf("storage: get %q from %s: %w", key, l.dir, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get %q from %s: %w", key, l.dir, err)
	}
	return data, nil
}

// List walks the directory without following symlinks and returns the keys
// of regular files under prefix, sorted bytewise like S3 does.
func (l *Local) List(ctx context.Context, prefix string) ([]string, error) {
	if err := validPrefix(prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := l.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	keys := []string{}
	err = fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if notFound(err) {
				return nil // removed while we walked
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		if d.IsDir() {
			dir := p + "/"
			if strings.HasPrefix(dir, prefix) || strings.HasPrefix(prefix, dir) {
				return nil
			}
			return fs.SkipDir
		}
		if d.Type().IsRegular() && strings.HasPrefix(p, prefix) && ValidKey(p) == nil {
			keys = append(keys, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: list %q in %s: %w", prefix, l.dir, err)
	}
	sort.Strings(keys)
	return keys, nil
}

// Delete removes key and then every parent directory left empty, so a
// deleted session leaves no skeleton of directories behind.
func (l *Local) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := l.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if err := noSymlinkParents(r, key); err != nil {
		return err
	}
	fi, err := r.Lstat(key)
	if notFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: delete %q from %s: %w", key, l.dir, err)
	}
	if fi.IsDir() {
		return nil // not a key; S3 would have nothing to delete either
	}
	if err := r.Remove(key); err != nil && !notFound(err) {
		return fmt.Errorf("storage: delete %q from %s: %w", key, l.dir, err)
	}
	for dir := path.Dir(key); dir != "."; dir = path.Dir(dir) {
		if r.Remove(dir) != nil {
			break // not empty (or already gone): stop pruning
		}
	}
	return nil
}

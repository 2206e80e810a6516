package dirfiles

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reso-project/reso/core"
)

// settingTTL is how long the value of the hidden setting is reused
// before it is asked for again (out of process, each ask is a call to the
// host). Only the setting is cached, never what its paths lead to.
const settingTTL = time.Second

// hidden knows the server's own state files (the hidden setting), which
// are never listed or served.
//
// Files are compared by identity (device and inode, os.SameFile), not by
// name: a hard link or a symbolic link to the database under another name
// is refused, and a file merely named like it is served. The paths are
// stat'ed afresh for every request, since companions such as the -wal and
// -journal files of the database come and go while the server runs; a
// cached "absent" could let a new one through.
type hidden struct {
	setting Setting
	ttl     time.Duration
	now     func() time.Time

	cached atomic.Pointer[hiddenPaths]
}

type hiddenPaths struct {
	at    time.Time
	paths []string
}

func newHidden(setting Setting) *hidden {
	return &hidden{setting: setting, ttl: settingTTL, now: time.Now}
}

// paths returns the paths of the setting, asking the host at most once per
// ttl (concurrent callers may each ask when it has just expired).
func (h *hidden) paths(ctx context.Context) ([]string, error) {
	now := h.now()
	if c := h.cached.Load(); c != nil && now.Sub(c.at) < h.ttl && !now.Before(c.at) {
		return c.paths, nil
	}
	v, err := h.setting(ctx)
	if err != nil {
		return nil, fmt.Errorf("dirfiles: %w", err)
	}
	var paths []string
	for _, p := range strings.Split(v, "\n") {
		// Exact paths: a name may end in a space.
		if p != "" {
			paths = append(paths, p)
		}
	}
	h.cached.Store(&hiddenPaths{at: now, paths: paths})
	return paths, nil
}

// statHidden returns what paths (those of the hidden setting) lead to
// now: the regular files and the directories among them that exist (only
// regular files are ever served, and directories hold them). A path that cannot be stat'ed for another reason than
// its absence is an error, so that the caller refuses rather than guesses.
func statHidden(paths []string) ([]fs.FileInfo, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	out := make([]fs.FileInfo, 0, len(paths))
	for _, p := range paths {
		fi, err := os.Stat(p)
		switch {
		case err == nil:
			if fi.Mode().IsRegular() || fi.IsDir() {
				out = append(out, fi)
			}
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		default:
			// The path is not in the error: a 500 answer shows its text.
			return nil, errors.New("dirfiles: cannot check a state file of the server")
		}
	}
	return out, nil
}

// inHiddenDir reports whether name, a path inside root (which was opened
// at dir), lies in one of the hidden directories: whether dir or one of
// its ancestors is one, or one of the directories on the way from dir to
// name. Directories are compared by identity, so a symbolic link to one
// is caught too.
func inHiddenDir(root *os.Root, dir, name string, hidden []fs.FileInfo) (bool, error) {
	if !slices.ContainsFunc(hidden, fs.FileInfo.IsDir) {
		return false, nil
	}
	if in, err := dirHidden(dir, hidden); in || err != nil {
		return in, err
	}
	segs := strings.Split(name, "/")
	for i := 1; i < len(segs); i++ {
		fi, err := root.Stat(strings.Join(segs[:i], "/"))
		if err != nil {
			return false, openError(err)
		}
		if isHidden(hidden, fi) {
			return true, nil
		}
	}
	return false, nil
}

// dirHidden reports whether dir or one of its ancestors is one of the
// hidden directories.
func dirHidden(dir string, hidden []fs.FileInfo) (bool, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, core.ErrNotFound
	}
	for p := abs; ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && isHidden(hidden, fi) {
			return true, nil
		}
		if filepath.Dir(p) == p {
			return false, nil
		}
	}
}

// isHidden reports whether fi is one of files.
func isHidden(files []fs.FileInfo, fi fs.FileInfo) bool {
	for _, h := range files {
		if os.SameFile(h, fi) {
			return true
		}
	}
	return false
}

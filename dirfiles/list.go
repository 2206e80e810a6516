package dirfiles

import (
	"context"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/reso-project/reso/core"
)

// Entry is a listed file or directory.
type Entry struct {
	Name    string
	Dir     bool      // a directory; otherwise a regular file
	Size    int64     // of a file
	ModTime time.Time // of a file
}

// List lists name, a clean slash-separated path relative to dir ("." for
// dir itself), sorted by name: its regular files and directories (a
// symbolic link followed while it stays inside dir), without the server's
// own state files and directories and without anything else. A name that
// is not a directory that may be listed, or whose listing fails or times
// out, answers core.ErrNotFound.
func (o *Opener) List(ctx context.Context, dir, name string) ([]Entry, error) {
	paths, err := o.hidden.paths(ctx)
	if err != nil {
		return nil, err
	}
	ents, err := bounded(ctx, o.lim, func() ([]Entry, error) { return list(dir, name, paths) }, nil)
	if err != nil {
		return nil, given(ctx, err, core.ErrNotFound)
	}
	return ents, nil
}

// list lists name in dir; hiddenPaths are the paths of
// the hidden setting.
func list(dir, name string, hiddenPaths []string) ([]Entry, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, core.ErrNotFound
	}
	defer root.Close()
	// Only a directory is opened: a FIFO named like one is not waited on.
	f, err := root.OpenFile(name, os.O_RDONLY|listingFlags, 0)
	if err != nil {
		return nil, core.ErrNotFound
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, core.ErrNotFound
	}
	hidden, err := statHidden(hiddenPaths)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := make([]Entry, 0, len(ents))
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			continue
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			// Followed only while it stays inside the root.
			if info, err = root.Stat(path.Join(name, e.Name())); err != nil {
				continue
			}
		}
		switch {
		case info.Mode().IsRegular():
			if !isHidden(hidden, info) {
				out = append(out, Entry{Name: e.Name(), Size: info.Size(), ModTime: info.ModTime()})
			}
		case info.IsDir():
			if !isHidden(hidden, info) {
				out = append(out, Entry{Name: e.Name(), Dir: true})
			}
		}
	}
	return out, nil
}

// Package files is the file listing and file download of the example
// application (routes 5 and 6 of docs/wire.md#example-routes; see
// docs/wire.md#file-listing and docs/wire.md#file-download), served from the
// directory held by the host's "directory" setting (see package config).
//
// Going beyond the earlier reference implementation whose wire behaviour reso
// keeps (docs/wire.md#beyond-the-reference):
//
//   - every open, stat and listing is confined to that directory with
//     os.Root: "..", encoded "..", and symbolic links never reach a file
//     outside it;
//   - the server's own state files (plugins.SettingHidden: the login
//     database, its companions, the instance secret) are never listed or
//     served, wherever they are and under whatever name (see hidden);
//   - only regular files are opened for download: a FIFO, socket or device
//     answers 404 Not Found at once, without being opened;
//   - every file system operation is bounded in time and in number (see
//     [Plugin.Timeout] and [Plugin.MaxPending]).
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// Status errors of the file resources (docs/wire.md#status-line-table).
var (
	ErrInvalidPath = core.Status(http.StatusBadRequest, "Invalid Path")
	ErrReadingFile = core.Status(http.StatusBadRequest, "Error Reading File")
)

// Plugin is the files plugin. Its zero value is ready.
type Plugin struct {
	// Timeout bounds each file system operation: opening and checking a
	// file, listing a directory, one read of a download. A request whose
	// operation takes longer answers 400 Error Reading File (a download)
	// or 404 Not Found (a listing); a download cut in its body ends its
	// connection. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxPending bounds the operations under way at once; more wait for
	// a slot within Timeout. An operation stuck in the kernel (a hung
	// network mount) keeps its slot until the kernel returns. Zero means
	// DefaultMaxPending.
	MaxPending int
}

// Routes returns routes 5 (listing) and 6 (download) of the example
// application (docs/wire.md#example-routes).
func (p Plugin) Routes(_ context.Context, host plugins.Services) ([]plugins.Route, error) {
	settings := host.Settings
	if settings == nil {
		return nil, errors.New("files: the host offers no settings")
	}
	o := NewOpener(settings, p.Timeout, p.MaxPending)
	fsys := &fileSystem{host: settings, open: o}
	return []plugins.Route{
		{Match: `GET /files(?:/|$|\?)`, Handler: core.Resource(&listing{fsys})},
		{Match: `GET /file/`, Handler: &download{fsys}},
	}, nil
}

// fileSystem is what the two routes share.
type fileSystem struct {
	host plugins.Settings
	open *Opener
}

// directory returns the configured directory.
func (fsys *fileSystem) directory(ctx context.Context) (string, error) {
	dir, err := fsys.host.Setting(ctx, plugins.SettingDirectory)
	if err != nil {
		return "", fmt.Errorf("files: %w", err)
	}
	if dir == "" {
		dir = "."
	}
	return dir, nil
}

// relName turns a remaining path into a name inside the root.
func relName(p string) string {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}

// given maps the error of an operation given up on (its timeout passed, or
// the request ended) to notDone, and leaves other errors as they are.
func given(ctx context.Context, err, notDone error) error {
	if errors.Is(err, errTimeout) || ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return notDone
	}
	return err
}

type listing struct{ fs *fileSystem }

// Get lists <directory>/<remaining path>, without the server's own state
// files and without entries that are neither a regular file nor a
// directory.
func (l *listing) Get(ctx context.Context, req *core.Request) (any, error) {
	if strings.Contains(req.Path, "..") {
		return nil, ErrInvalidPath
	}
	dir, err := l.fs.directory(ctx)
	if err != nil {
		return nil, err
	}
	paths, err := l.fs.open.hidden.paths(ctx)
	if err != nil {
		return nil, err
	}
	v, err := bounded(ctx, l.fs.open.lim, func() (core.Node, error) { return list(dir, req.Path, paths) }, nil)
	if err != nil {
		return nil, given(ctx, err, core.ErrNotFound)
	}
	return v, nil
}

// list lists the remaining path in dir; hiddenPaths are the paths of
// plugins.SettingHidden.
func list(dir, remaining string, hiddenPaths []string) (core.Node, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return core.Node{}, core.ErrNotFound
	}
	defer root.Close()
	name := relName(remaining)
	// Only a directory is opened: a FIFO named like one is not waited on.
	f, err := root.OpenFile(name, os.O_RDONLY|listingFlags, 0)
	if err != nil {
		return core.Node{}, core.ErrNotFound
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return core.Node{}, core.ErrNotFound
	}
	hidden, err := statHidden(hiddenPaths)
	if err != nil {
		return core.Node{}, err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := make(core.List, 0, len(ents))
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
		rel := path.Join("/", remaining, e.Name())
		switch {
		case info.Mode().IsRegular():
			if isHidden(hidden, info) {
				continue
			}
			out = append(out, core.Node{Name: "file", Content: core.Record{
				{Name: "name", Value: e.Name()},
				{Name: "url", Value: core.RawURL(escape("/file" + rel))},
				{Name: "size", Value: info.Size()},
				{Name: "mtime", Value: info.ModTime().Unix()},
			}})
		case info.IsDir():
			if isHidden(hidden, info) {
				continue
			}
			out = append(out, core.Node{Name: "dir", Content: core.Record{
				{Name: "name", Value: e.Name()},
				{Name: "url", Value: escape("/files" + rel)},
			}})
		}
	}
	return core.Node{Name: "files", Content: out}, nil
}

// escape percent-encodes what a path cannot carry as is ("?", "#", "%", ...);
// ordinary names stay unchanged.
func escape(p string) string { return (&url.URL{Path: p}).EscapedPath() }

type download struct{ fs *fileSystem }

// openError maps a failed stat or open: a name that is not there (or leads
// outside the directory) is 404 Not Found; one that is there but cannot be
// opened (permission, a link loop, an I/O error) is 400 Error Reading File.
func openError(err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EIO) {
		return ErrReadingFile
	}
	return core.ErrNotFound
}

// Handle answers the raw bytes of <directory>/<remaining path>, streamed,
// with Range and conditional requests; HEAD answers the same header without
// the bytes. Only what [Opener.Open] opens is served; anything else is
// 404 Not Found, answered without opening it.
func (d *download) Handle(ctx context.Context, req *core.Request) (*core.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return nil, core.ErrMethodNotAllowed
	}
	dir, err := d.fs.directory(ctx)
	if err != nil {
		return nil, err
	}
	c, err := d.fs.open.Open(ctx, dir, relName(req.Path))
	if err != nil {
		return nil, err
	}
	return &core.Response{ContentType: core.TypeOctet, Content: c}, nil
}

// opened is a file open for download and what fstat said of it.
type opened struct {
	f  *os.File
	st fs.FileInfo
}

// openRegular opens name in dir for reading if it is a regular file that
// is none of the files at hiddenPaths and lies in none of the directories
// there.
//
// The file is stat'ed (through the root, symbolic links inside it
// followed) before it is opened, so that a FIFO, a socket or a device is
// never opened; it is then opened without blocking and fstat'ed, so that a
// file swapped in between is caught.
func openRegular(dir, name string, hiddenPaths []string) (opened, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return opened{}, core.ErrNotFound
	}
	defer root.Close()
	pre, err := root.Stat(name)
	if err != nil {
		return opened{}, openError(err)
	}
	if !pre.Mode().IsRegular() {
		return opened{}, core.ErrNotFound
	}
	hidden, err := statHidden(hiddenPaths)
	if err != nil {
		return opened{}, err
	}
	if isHidden(hidden, pre) {
		return opened{}, core.ErrNotFound
	}
	in, err := inHiddenDir(root, dir, name, hidden)
	if err != nil {
		return opened{}, err
	}
	if in {
		return opened{}, core.ErrNotFound
	}
	f, err := root.OpenFile(name, os.O_RDONLY|downloadFlags, 0)
	if err != nil {
		return opened{}, openError(err)
	}
	st, err := checkOpened(f, pre)
	if err != nil {
		f.Close()
		return opened{}, err
	}
	return opened{f: f, st: st}, nil
}

// checkOpened fstats f and returns what it says if f is the regular file
// pre describes; a file swapped in between stat and open is 404 Not Found.
func checkOpened(f *os.File, pre fs.FileInfo) (fs.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, ErrReadingFile
	}
	if !st.Mode().IsRegular() || !os.SameFile(pre, st) {
		return nil, core.ErrNotFound
	}
	return st, nil
}

var (
	_ plugins.Plugin = Plugin{}
	_ core.Getter    = (*listing)(nil)
	_ core.Handler   = (*download)(nil)
	_ io.ReaderAt    = (*boundedFile)(nil)
	_ io.Closer      = (*boundedFile)(nil)
)

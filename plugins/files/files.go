// Package files is the file listing and file download of the example
// application (SPEC 2.5 and 4.2 routes 5 and 6), served from the directory
// held by the host's "directory" setting (see package config).
//
// Going beyond the reference implementation, every open, stat and listing is
// confined to that directory with os.Root: "..", encoded "..", and symbolic
// links never reach a file outside it.
package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/plugins/config"
)

// Status errors of the file resources (SPEC 7).
var (
	ErrInvalidPath = core.Status(http.StatusBadRequest, "Invalid Path")
	ErrReadingFile = core.Status(http.StatusBadRequest, "Error Reading File")
)

// Plugin is the files plugin. Its zero value is ready.
type Plugin struct{}

// Routes returns SPEC 4.2 routes 5 (listing) and 6 (download).
func (Plugin) Routes(_ context.Context, host plugins.Host) ([]plugins.Route, error) {
	return []plugins.Route{
		{Match: `GET /files(?:/|$|\?)`, Handler: core.Resource(&listing{host: host})},
		{Match: `GET /file/`, Handler: &download{host: host}},
	}, nil
}

// openRoot opens the configured directory.
func openRoot(ctx context.Context, host plugins.Host) (*os.Root, error) {
	dir, err := host.Setting(ctx, config.Directory)
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	if dir == "" {
		dir = "."
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, core.ErrNotFound
	}
	return root, nil
}

// relName turns a remaining path into a name inside the root.
func relName(p string) string {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}

type listing struct{ host plugins.Host }

// Get lists <directory>/<remaining path>.
func (l *listing) Get(ctx context.Context, req *core.Request) (any, error) {
	if strings.Contains(req.Path, "..") {
		return nil, ErrInvalidPath
	}
	root, err := openRoot(ctx, l.host)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	name := relName(req.Path)
	f, err := root.Open(name)
	if err != nil {
		return nil, core.ErrNotFound
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, core.ErrNotFound
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
		rel := path.Join("/", req.Path, e.Name())
		switch {
		case info.Mode().IsRegular():
			out = append(out, core.Node{Name: "file", Content: core.Record{
				{Name: "name", Value: e.Name()},
				{Name: "url", Value: escape("/file" + rel)},
				{Name: "size", Value: info.Size()},
				{Name: "mtime", Value: info.ModTime().Unix()},
			}})
		case info.IsDir():
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

type download struct{ host plugins.Host }

// openError maps a failed open: a name that is not there (or leads outside
// the directory) is 404 Not Found; one that is there but cannot be opened
// (permission, a link loop, an I/O error) is 400 Error Reading File.
func openError(err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EIO) {
		return ErrReadingFile
	}
	return core.ErrNotFound
}

// Handle answers the raw bytes of <directory>/<remaining path>, streamed,
// with Range and conditional requests. HEAD answers the same header without
// the bytes.
func (d *download) Handle(ctx context.Context, req *core.Request) (*core.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return nil, core.ErrMethodNotAllowed
	}
	root, err := openRoot(ctx, d.host)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(relName(req.Path))
	if err != nil {
		return nil, openError(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, ErrReadingFile
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, core.ErrNotFound
	}
	return &core.Response{
		ContentType: core.TypeOctet,
		Content:     &core.Content{Name: st.Name(), ModTime: st.ModTime(), Size: st.Size(), ReaderAt: f},
	}, nil
}

var (
	_ plugins.Plugin = Plugin{}
	_ core.Getter    = (*listing)(nil)
	_ core.Handler   = (*download)(nil)
)

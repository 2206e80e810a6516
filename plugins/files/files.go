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
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/dirfiles"
	"github.com/reso-project/reso/plugins"
)

// Status errors of the file resources (docs/wire.md#status-line-table).
var (
	ErrInvalidPath = core.Status(http.StatusBadRequest, "Invalid Path")
	ErrReadingFile = dirfiles.ErrReadingFile
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
	o := dirfiles.NewOpener(hiddenOf(settings), p.Timeout, p.MaxPending)
	fsys := &fileSystem{host: settings, open: o}
	return []plugins.Route{
		{Match: `GET /files(?:/|$|\?)`, Handler: core.Resource(&listing{fsys})},
		{Match: `GET /file/`, Handler: &download{fsys}},
	}, nil
}

// fileSystem is what the two routes share.
type fileSystem struct {
	host plugins.Settings
	open *dirfiles.Opener
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
	ents, err := l.fs.open.List(ctx, dir, relName(req.Path))
	if err != nil {
		return nil, err
	}
	return node(req.Path, ents), nil
}

// node is the listing of entries in the remaining path.
func node(remaining string, ents []dirfiles.Entry) core.Node {
	out := make(core.List, 0, len(ents))
	for _, e := range ents {
		rel := path.Join("/", remaining, e.Name)
		if e.Dir {
			out = append(out, core.Node{Name: "dir", Content: core.Record{
				{Name: "name", Value: e.Name},
				{Name: "url", Value: escape("/files" + rel)},
			}})
			continue
		}
		out = append(out, core.Node{Name: "file", Content: core.Record{
			{Name: "name", Value: e.Name},
			{Name: "url", Value: core.RawURL(escape("/file" + rel))},
			{Name: "size", Value: e.Size},
			{Name: "mtime", Value: e.ModTime.Unix()},
		}})
	}
	return core.Node{Name: "files", Content: out}
}

// escape percent-encodes what a path cannot carry as is ("?", "#", "%", ...);
// ordinary names stay unchanged.
func escape(p string) string { return (&url.URL{Path: p}).EscapedPath() }

type download struct{ fs *fileSystem }

// Handle answers the raw bytes of <directory>/<remaining path>, streamed,
// with Range and conditional requests; HEAD answers the same header without
// the bytes. Only what [dirfiles.Opener.Open] opens is served; anything else is
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

var (
	_ plugins.Plugin = Plugin{}
	_ core.Getter    = (*listing)(nil)
	_ core.Handler   = (*download)(nil)
)

// Defaults of [Plugin].
const (
	DefaultTimeout    = dirfiles.DefaultTimeout
	DefaultMaxPending = dirfiles.DefaultMaxPending
)

// hiddenOf returns the setting of the server's state files that host
// holds (plugins.SettingHidden), as dirfiles asks for it.
func hiddenOf(host plugins.Settings) dirfiles.Setting {
	return func(ctx context.Context) (string, error) { return host.Setting(ctx, plugins.SettingHidden) }
}

// Package www serves the static files of a web app (its pages, scripts,
// styles and images) from a directory, under a path prefix of the server
// (reso -www DIR -www-prefix /app/; see docs/www.md).
//
// A request under the prefix answers the file at the same path under the
// directory, opened with the checks of the file download
// ([dirfiles.Opener]): confined to the directory, regular files only, never
// the server's own state. On top of that:
//
//   - the Content-Type follows the file's extension ([ContentType]);
//   - a directory answers its index.html; a directory named without its
//     trailing slash answers 301 Moved Permanently to the name with it;
//     nothing is ever listed;
//   - names with a segment that starts with "." (.git, .env, "..") and
//     empty segments answer 404 Not Found;
//   - ETag, Last-Modified, Range, HEAD and conditional requests (304 Not
//     Modified) come from http.ServeContent;
//   - every answer carries the security headers of [Headers];
//   - <prefix>reso.js and <prefix>reso.d.ts answer the JavaScript client of
//     the channel (package js) unless the directory has files of those
//     names.
//
// The plugin takes its directory and prefix from the host's settings
// [SettingDir] and [SettingPrefix], so it runs compiled in and isolated
// alike; without a directory it has no routes.
package www

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/reso-project/reso/client/js"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/dirfiles"
	"github.com/reso-project/reso/plugins"
)

// Names of the host settings the plugin reads.
const (
	// SettingDir is the absolute path of the directory to serve; "" (the
	// default) serves nothing.
	SettingDir = "www"
	// SettingPrefix is the path prefix the files are served under: it
	// starts and ends with "/"; "" means [DefaultPrefix].
	SettingPrefix = "www-prefix"
)

// DefaultPrefix is the prefix of a host that sets none.
const DefaultPrefix = "/app/"

// CSP is the Content-Security-Policy of every answer: the app's pages run
// only the app's own scripts and styles (no inline ones), load images
// from the app and data: URLs, connect only to their own origin (the
// channel's WebSocket and HTTP doors included) and are framed only by it.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'"

// Headers returns the security and caching headers of every answer.
func Headers() http.Header {
	return http.Header{
		"Content-Security-Policy":      {CSP},
		"X-Content-Type-Options":       {"nosniff"},
		"X-Frame-Options":              {"SAMEORIGIN"},
		"Referrer-Policy":              {"strict-origin-when-cross-origin"},
		"Cross-Origin-Opener-Policy":   {"same-origin"},
		"Cross-Origin-Resource-Policy": {"same-origin"},
		// Always revalidated: a changed file is seen at once, an unchanged
		// one costs a 304.
		"Cache-Control": {"no-cache"},
	}
}

// Plugin is the www plugin. Its zero value is ready.
type Plugin struct{}

// Routes returns the route GET <prefix> (HEAD too), or none when the host
// sets no directory. A directory that is not one, a prefix of the wrong
// shape, or a directory inside the server's state directory is an error.
func (Plugin) Routes(ctx context.Context, host plugins.Services) ([]plugins.Route, error) {
	settings := host.Settings
	if settings == nil {
		return nil, errors.New("www: the host offers no settings")
	}
	dir, err := settings.Setting(ctx, SettingDir)
	if err != nil || dir == "" {
		return nil, err
	}
	prefix, err := settings.Setting(ctx, SettingPrefix)
	if err != nil {
		return nil, err
	}
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("www: %s: not a directory", dir)
	}
	open := dirfiles.NewOpener(func(ctx context.Context) (string, error) { return settings.Setting(ctx, plugins.SettingHidden) }, 0, 0)
	if err := open.CheckDir(ctx, dir); err != nil {
		return nil, fmt.Errorf("www: %s: refused: %w", dir, err)
	}
	return []plugins.Route{{Match: Match(prefix), Handler: &site{dir: dir, prefix: prefix, open: open}}}, nil
}

// CheckPrefix checks the shape of a prefix: a clean absolute path that
// ends with "/".
func CheckPrefix(prefix string) error {
	clean := path.Clean(prefix)
	if !strings.HasPrefix(prefix, "/") || prefix != "/" && (clean == "/" || clean+"/" != prefix) ||
		strings.ContainsAny(prefix, "?#%\\") || strings.ContainsFunc(prefix, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("www: prefix %q: want a clean path that starts and ends with / (e.g. /app/)", prefix)
	}
	return nil
}

// Match returns the route match of the site at prefix: GET of the prefix,
// of anything under it, and of the prefix without its trailing slash (which
// is redirected to it).
func Match(prefix string) string {
	if prefix == "/" {
		return "GET /"
	}
	return "GET " + regexp.QuoteMeta(strings.TrimSuffix(prefix, "/")) + `(?:/|$|\?)`
}

// site serves the files of dir under prefix.
type site struct {
	dir    string
	prefix string
	open   *dirfiles.Opener
}

// Handle answers the file at the remaining path, index.html for a
// directory, a redirect for a directory or the prefix without its slash,
// or 404 Not Found.
func (s *site) Handle(ctx context.Context, req *core.Request) (*core.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return nil, core.ErrMethodNotAllowed
	}
	if !strings.HasSuffix(req.Consumed, "/") {
		return redirect(s.prefix)
	}
	p := req.Path
	if !servable(p) {
		return nil, core.ErrNotFound
	}
	name := strings.TrimSuffix(p, "/")
	if name == "" {
		name = "index.html"
	} else if strings.HasSuffix(p, "/") {
		name += "/index.html"
	}
	c, err := s.open.Open(ctx, s.dir, name)
	if errors.Is(err, core.ErrNotFound) && !strings.HasSuffix(p, "/") && p != "" {
		// A directory named without its slash: its relative links need it.
		if ic, ierr := s.open.Open(ctx, s.dir, name+"/index.html"); ierr == nil {
			if cl, ok := ic.ReaderAt.(io.Closer); ok {
				cl.Close()
			}
			return redirect(s.prefix + p + "/")
		}
	}
	if errors.Is(err, core.ErrNotFound) {
		if b, ok := bundled[p]; ok {
			c, err = bundledContent(p, b), nil
		}
	}
	if err != nil {
		return nil, err
	}
	h := Headers()
	h.Set("Etag", etag(c))
	return &core.Response{ContentType: ContentType(name), Header: h, Content: c}, nil
}

// servable reports whether a remaining path may name a file: no segment
// starts with "." (hidden files, "..") and none is empty but a last one
// after a directory's slash.
func servable(p string) bool {
	if p == "" {
		return true
	}
	if strings.ContainsAny(p, "\\\x00") {
		return false
	}
	segs := strings.Split(strings.TrimSuffix(p, "/"), "/")
	for _, seg := range segs {
		if seg == "" || seg[0] == '.' {
			return false
		}
	}
	return true
}

// redirect answers 301 Moved Permanently to the path p, percent-encoded.
func redirect(p string) (*core.Response, error) {
	loc := (&url.URL{Path: p}).EscapedPath()
	if strings.HasPrefix(loc, "//") {
		return nil, core.ErrNotFound
	}
	h := Headers()
	h.Set("Location", loc)
	return &core.Response{
		Code:        http.StatusMovedPermanently,
		ContentType: core.TypePlain,
		Header:      h,
		Body:        []byte("301 Moved Permanently: " + loc + "\n"),
	}, nil
}

// etag is the entity tag of a file: its modification time and size, so
// that a changed file gets another (a bundled file: its hash).
func etag(c *core.Content) string {
	if c.ModTime.IsZero() {
		return `"` + c.Name + `"`
	}
	return `"` + strconv.FormatInt(c.ModTime.UnixNano(), 36) + "-" + strconv.FormatInt(c.Size, 36) + `"`
}

// bundled are the files every app gets at the top of its prefix unless its
// directory has its own: the JavaScript client of the channel and its
// declarations, so that a page imports "./reso.js".
var bundled = map[string][]byte{
	"reso.js":   js.Module,
	"reso.d.ts": js.Declarations,
}

// bundledContent serves a bundled file; its name in the Content is a hash
// of its bytes, which etag uses (there is no modification time).
func bundledContent(name string, b []byte) *core.Content {
	sum := sha256.Sum256(b)
	return &core.Content{
		Name:     name + "-" + hex.EncodeToString(sum[:8]),
		Size:     int64(len(b)),
		ReaderAt: bytes.NewReader(b),
	}
}

var (
	_ plugins.Plugin = Plugin{}
	_ core.Handler   = (*site)(nil)
)

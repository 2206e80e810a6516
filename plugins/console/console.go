// Package console is the live console of the resource channel: a page at
// /console/ that browses the channel's tree, shows notifications as they
// arrive and puts, posts and deletes resources, all over the browser's own
// WebSocket to GET /channel (docs/channel.md). It is plain HTML, CSS and
// JavaScript embedded in the binary: no build step, nothing downloaded.
//
// The files are answered by an ordinary core handler (a Body and a
// ContentType), so the plugin works compiled in and isolated alike. Only
// the embedded files are served, looked up by their exact name; every
// other path is 404 Not Found. Every answer carries a strict
// Content-Security-Policy: the page runs only its own script and style
// (no inline ones) and connects only to its own origin.
package console

import (
	"context"
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// Prefix is the path the console is served under.
const Prefix = "/console/"

// CSP is the Content-Security-Policy of every file of the console. 'self'
// in connect-src also covers ws: and wss: to the page's own host and port
// (CSP Level 3; Chromium and Firefox implement it), which is all the
// WebSocket to /channel needs.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed static
var static embed.FS

// file is one embedded file as served.
type file struct {
	contentType string
	body        []byte
}

// files maps the names under Prefix to the embedded files; "" is the
// index.
var files = load()

func load() map[string]file {
	m := make(map[string]file)
	entries, err := fs.ReadDir(static, "static")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		body, err := static.ReadFile("static/" + e.Name())
		if err != nil {
			panic(err)
		}
		// The system's table only for other types: it is loaded (about
		// 1 MiB the garbage collector goes through at every cycle) at the
		// first call.
		var ct string
		switch path.Ext(e.Name()) {
		case ".html":
			ct = "text/html; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".js":
			ct = "text/javascript; charset=utf-8"
		default:
			ct = mime.TypeByExtension(path.Ext(e.Name()))
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		m[e.Name()] = file{contentType: ct, body: body}
	}
	m[""] = m["index.html"]
	return m
}

// Plugin is the console plugin. Its zero value is ready.
type Plugin struct{}

// Routes returns the route GET /console/ (HEAD too, as for every GET
// route) and GET / (the server's root, which a person opens first), which
// answers 302 Found to the console. The files need no identity; the page's
// WebSocket carries the browser's own credentials.
func (Plugin) Routes(context.Context, plugins.Services) ([]plugins.Route, error) {
	return []plugins.Route{
		{Match: "GET " + Prefix, Handler: Handler{}},
		{Match: `GET /(?:$|\?)`, Handler: core.HandlerFunc(toConsole)},
	}, nil
}

// toConsole answers the server's root with a redirect to the console.
func toConsole(context.Context, *core.Request) (*core.Response, error) {
	return &core.Response{
		Code:        http.StatusFound,
		ContentType: core.TypePlain,
		Header:      http.Header{"Location": {Prefix}},
		Body:        []byte("302 Found: " + Prefix + "\n"),
	}, nil
}

// Handler serves the embedded files by their name: the remaining path of
// the request, "" or index.html for the page.
type Handler struct{}

// Handle answers the file named by req.Path, or 404 Not Found.
func (Handler) Handle(_ context.Context, req *core.Request) (*core.Response, error) {
	f, ok := files[req.Path]
	if !ok {
		return nil, core.ErrNotFound
	}
	return &core.Response{ContentType: f.contentType, Header: Headers(), Body: f.body}, nil
}

// Headers returns the security and caching headers of every file.
func Headers() http.Header {
	return http.Header{
		"Content-Security-Policy": {CSP},
		"X-Content-Type-Options":  {"nosniff"},
		"Referrer-Policy":         {"no-referrer"},
		"Cache-Control":           {"no-cache"},
	}
}

var (
	_ plugins.Plugin = Plugin{}
	_ core.Handler   = Handler{}
)

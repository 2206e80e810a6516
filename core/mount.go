package core

import (
	"net/http"
	"net/url"
	"strings"
)

// Mount returns the part of the path the client sent that a handler in
// front of this one removed, percent-decoded: "/rt/channel" for a request
// for /rt/channel/a that reaches a handler mounted with
// http.StripPrefix("/rt/channel", ...), which sees the path /a. It is ""
// when nothing was removed, and when r's path is not the end of the path
// the client sent (r.RequestURI), as after a rewrite.
//
// A [Request] starts with it as its Consumed path, so that an answer names
// paths as the client sees them wherever it is mounted.
func Mount(r *http.Request) string {
	sent := r.RequestURI
	if i := strings.IndexByte(sent, '?'); i >= 0 {
		sent = sent[:i]
	}
	if sent == "" || sent == r.URL.Path || sent == r.URL.RawPath {
		return ""
	}
	if sent[0] != '/' {
		// The absolute form (a request to a proxy): the path follows
		// the authority.
		u, err := url.ParseRequestURI(sent)
		if err != nil {
			return ""
		}
		sent = u.EscapedPath()
	}
	decoded, err := url.PathUnescape(sent)
	if err != nil || !strings.HasSuffix(decoded, r.URL.Path) {
		return ""
	}
	return decoded[:len(decoded)-len(r.URL.Path)]
}

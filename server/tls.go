package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
)

// Over TLS reso speaks HTTP/1.1 only (ALPN "http/1.1"; no h2): HTTP/2 has no
// reason phrase in its status, so "404 Not Logged In" or "400 Invalid Path"
// would reach clients as a bare code, and exact reason phrases are part of
// reso's wire contract (docs/wire.md). The cost is what HTTP/2 would bring:
// one connection per concurrent request and no header compression.

// tlsConfig returns c for serving: a copy that offers HTTP/1.1 alone
// (ALPN "http/1.1") and TLS 1.2 at least.
func tlsConfig(c *tls.Config) *tls.Config {
	c = c.Clone()
	c.NextProtos = []string{"http/1.1"}
	if c.MinVersion < tls.VersionTLS12 {
		c.MinVersion = tls.VersionTLS12
	}
	return c
}

// tlsListen returns a listener of TLS connections over ln, to be wrapped by
// core.Listen: core's connection must see the plaintext status lines to put
// the exact reason phrases in them, so it goes outside the TLS connection,
// not inside.
func tlsListen(ln net.Listener, config *tls.Config) net.Listener {
	return &tlsListener{Listener: ln, config: config}
}

// tlsSetUp makes srv serve TLS connections of tlsListen: HTTP/1.1 only,
// and requests get r.TLS. net/http fills r.TLS only for a connection that
// is a *tls.Conn itself, and ours is wrapped by core.Listen, so the
// connection's TLS state is put in its context and copied to each request
// before any other handler sees it.
func tlsSetUp(srv *http.Server) {
	// An empty, non-nil map turns net/http's automatic HTTP/2 off.
	srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	next := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if next != nil {
			ctx = next(ctx, c)
		}
		if tc := tlsConnOf(c); tc != nil {
			ctx = context.WithValue(ctx, tlsConnKey{}, tc)
		}
		return ctx
	}
	h := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			if tc, ok := r.Context().Value(tlsConnKey{}).(*tlsConn); ok {
				// The request has been read: the handshake is done.
				st := tc.ConnectionState()
				r.TLS = &st
			}
		}
		h.ServeHTTP(w, r)
	})
}

type tlsConnKey struct{}

// tlsConnOf finds the *tlsConn in c, through the connections that wrap
// it (core.Listen's) with a NetConn method.
func tlsConnOf(c net.Conn) *tlsConn {
	for c != nil {
		if tc, ok := c.(*tlsConn); ok {
			return tc
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = u.NetConn()
	}
	return nil
}

// tlsListener accepts TLS connections. The handshake happens on the first
// read, in the connection's own goroutine, within the server's read
// deadlines (as with tls.NewListener).
type tlsListener struct {
	net.Listener
	config *tls.Config
}

func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &tlsConn{Conn: tls.Server(c, l.config)}, nil
}

// tlsConn is a server TLS connection that answers a plain HTTP request
// with 400 Bad Request, as net/http does for its own TLS connections.
type tlsConn struct{ *tls.Conn }

// Read completes the handshake first. When it fails because the client
// spoke plain HTTP, the client gets a plain "400 Bad Request" and the
// connection is closed; the error returned is then a read error, which
// net/http drops without answering again.
func (c *tlsConn) Read(p []byte) (int, error) {
	if err := c.Handshake(); err != nil {
		var rhe tls.RecordHeaderError
		if errors.As(err, &rhe) && rhe.Conn != nil && looksLikeHTTP(rhe.RecordHeader) {
			_, _ = io.WriteString(rhe.Conn, "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
			_ = rhe.Conn.Close()
		}
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	return c.Conn.Read(p)
}

// looksLikeHTTP reports whether the first five bytes of a connection are
// the start of a plain HTTP request.
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "SEND ", "CANCE":
		return true
	}
	return false
}

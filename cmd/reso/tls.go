package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
)

// tlsOptions are the flags -tls-cert and -tls-key: with both, the server
// answers HTTPS on -addr instead of plain HTTP.
//
// Over TLS reso speaks HTTP/1.1 only (ALPN "http/1.1"; no h2): HTTP/2 has no
// reason phrase in its status, so "404 Not Logged In" or "400 Invalid Path"
// would reach clients as a bare code, and exact reason phrases are part of
// reso's wire contract (docs/wire.md). The cost is what HTTP/2 would bring:
// one connection per concurrent request and no header compression.
type tlsOptions struct {
	cert, key string
	pair      *tls.Certificate // loaded by validate
}

// tlsFlags declares -tls-cert and -tls-key on fs, filling o.
func tlsFlags(fs *flag.FlagSet, o *tlsOptions) {
	fs.StringVar(&o.cert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS (HTTP/1.1 only) on -addr; needs -tls-key")
	fs.StringVar(&o.key, "tls-key", "", "PEM private key file of -tls-cert")
}

// enabled reports whether the server serves HTTPS.
func (o *tlsOptions) enabled() bool { return o.pair != nil }

// validate checks that -tls-cert and -tls-key come together and loads the
// pair: a missing or unreadable file or a key that does not match the
// certificate is a usage error.
func (o *tlsOptions) validate() error {
	switch {
	case o.cert == "" && o.key == "":
		return nil
	case o.key == "":
		return usagef("-tls-cert needs -tls-key")
	case o.cert == "":
		return usagef("-tls-key needs -tls-cert")
	}
	pair, err := tls.LoadX509KeyPair(o.cert, o.key)
	if err != nil {
		return usagef("-tls-cert %s, -tls-key %s: %s", o.cert, o.key, describe(err))
	}
	o.pair = &pair
	return nil
}

// config returns the server's TLS configuration: the certificate and ALPN
// "http/1.1" only.
func (o *tlsOptions) config() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{*o.pair},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	}
}

// listener returns ln itself without TLS, else a listener of TLS
// connections over ln, to be wrapped by core.Listen: core's connection
// must see the plaintext status lines to put the exact reason phrases in
// them, so it goes outside the TLS connection, not inside.
func (o *tlsOptions) listener(ln net.Listener) net.Listener {
	if !o.enabled() {
		return ln
	}
	return &tlsListener{Listener: ln, config: o.config()}
}

// setUp makes srv serve TLS connections of a listener from listener:
// HTTP/1.1 only, and requests get r.TLS. net/http fills r.TLS only for a
// connection that is a *tls.Conn itself, and ours is wrapped by
// core.Listen, so the connection's TLS state is put in its context and
// copied to each request before any other handler sees it.
func (o *tlsOptions) setUp(srv *http.Server) {
	if !o.enabled() {
		return
	}
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

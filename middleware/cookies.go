package middleware

import (
	"bufio"
	"io"
	"net"
	"net/http"
)

// Cookies drops, when the answer starts, every Set-Cookie header that would
// set a cookie to the value the request already carries, with no expiry
// (cookies unchanged from the request are omitted, docs/wire.md#responses).
// Added, changed and expiring cookies pass.
//
// The writer passed on keeps Flush, Hijack, ReadFrom and Unwrap, so
// http.ResponseController and io.Copy's sendfile path work through it.
func Cookies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// As r.Header.Get("Cookie") == "", without canonicalizing the key.
		if c := r.Header["Cookie"]; len(c) == 0 || c[0] == "" {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&cookieWriter{ResponseWriter: w, r: r}, r)
	})
}

type cookieWriter struct {
	http.ResponseWriter
	r    *http.Request
	done bool
}

func (c *cookieWriter) filter() {
	if c.done {
		return
	}
	c.done = true
	h := c.ResponseWriter.Header()
	set := h["Set-Cookie"]
	if len(set) == 0 {
		return
	}
	kept := set[:0:0]
	for _, line := range set {
		sc, err := http.ParseSetCookie(line)
		if err == nil && sc.MaxAge == 0 && sc.Expires.IsZero() {
			if rc, err := c.r.Cookie(sc.Name); err == nil && rc.Value == sc.Value {
				continue
			}
		}
		kept = append(kept, line)
	}
	if len(kept) == 0 {
		h.Del("Set-Cookie")
		return
	}
	h["Set-Cookie"] = kept
}

func (c *cookieWriter) WriteHeader(code int) {
	if code >= 200 {
		c.filter()
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *cookieWriter) Write(p []byte) (int, error) {
	c.filter()
	return c.ResponseWriter.Write(p)
}

// ReadFrom keeps io.Copy's sendfile path for downloads.
func (c *cookieWriter) ReadFrom(r io.Reader) (int64, error) {
	c.filter()
	return io.Copy(c.ResponseWriter, r)
}

// FlushError sends the header, filtered, and what is buffered, for
// http.ResponseController.
func (c *cookieWriter) FlushError() error {
	c.filter()
	return http.NewResponseController(c.ResponseWriter).Flush()
}

// Flush implements http.Flusher.
func (c *cookieWriter) Flush() { _ = c.FlushError() }

// Hijack implements http.Hijacker.
func (c *cookieWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(c.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *cookieWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

var (
	_ http.Flusher  = (*cookieWriter)(nil)
	_ http.Hijacker = (*cookieWriter)(nil)
	_ io.ReaderFrom = (*cookieWriter)(nil)
)

package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
)

// WriteStatus writes the header of a response with the given code and reason
// phrase. The phrase reaches the wire when the server was set up with
// [Listen] and [ConnContext]; otherwise the standard phrase is sent.
//
// A phrase other than the standard one is put on the wire by flushing the
// header at once (through w's Flush, found with http.ResponseController), so
// it applies to exactly this response; set Content-Length before calling, or
// the body of an HTTP/1.1 answer is chunked. A writer in between that cannot
// flush gets the standard phrase.
func WriteStatus(w http.ResponseWriter, r *http.Request, code int, reason string) {
	if reason == "" || reason == http.StatusText(code) || !validReason(reason) {
		w.WriteHeader(code)
		return
	}
	c, ok := r.Context().Value(connKey{}).(*reasonConn)
	if !ok {
		w.WriteHeader(code)
		return
	}
	rl := c.announce(code, reason)
	w.WriteHeader(code)
	_ = http.NewResponseController(w).Flush()
	c.withdraw(rl)
}

// ClientGone reports whether err only says that the client of r went away:
// err is (or wraps) context.Canceled or context.DeadlineExceeded while the
// request's context has been cancelled, as net/http cancels it when the
// connection fails. Such a request gets no answer; it is not a server error,
// and [WriteError] writes nothing for it. A request whose context ended by
// its own deadline (a timeout set by the server) is not one: it still gets
// an answer.
func ClientGone(r *http.Request, err error) bool {
	if err == nil || !errors.Is(r.Context().Err(), context.Canceled) {
		return false
	}
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// WriteError answers the request with err: a [StatusError] gives its status
// line, anything else 500 Internal Server Error. The body repeats the
// status line as text/plain, except that under [ShowErrors] the body of a
// 500 for an error that is not a status error is the error's text. When the
// request context asks for HTML (its ACCEPT variable negotiates text/html),
// the body is the same as an HTML page instead ([AppendHTML], titled with
// the status line, with the HTML headers of docs/wire.md#html).
// Content-Length is set, also for HEAD, which gets no body.
//
// When [ClientGone] reports err, nothing is answered: an HTTP/1 connection
// is closed without a response (it is going away), otherwise the handler
// just writes nothing.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	if ClientGone(r, err) {
		if conn, _, herr := http.NewResponseController(w).Hijack(); herr == nil {
			_ = conn.Close()
		}
		return
	}
	se, ok := AsStatus(err)
	body := ""
	shown := false
	if ok {
		body = se.Error() + "\n"
	} else {
		se = ErrInternal
		if showErrors(r.Context()) {
			body, shown = err.Error(), true
		} else {
			body = se.Error() + "\n"
		}
	}
	h := w.Header()
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	h.Del("Last-Modified")
	h.Del("Etag")
	if wantsHTML(r) {
		// The same text as a page: the status line as its title, a
		// shown error's text as its paragraph.
		var text any
		if shown {
			text = body
		}
		body = string(AppendHTML(nil, HTMLPage{Title: se.Error()}, text))
		setHTMLHeaders(h)
	} else {
		h.Set("Content-Type", "text/plain")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	WriteStatus(w, r, se.Code(), se.Reason())
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(body))
	}
}

// wantsHTML reports whether the request context of r asks for HTML (its
// ACCEPT variable negotiates text/html).
func wantsHTML(r *http.Request) bool {
	req := FromContext(r.Context())
	return req != nil && Negotiate(req.Accept()) == TypeHTML
}

// PanicError is the error of a recovered panic: its text is the panic value
// followed by the stack trace, the body of a 500 answer.
type PanicError struct {
	Value any
	Stack []byte
}

// Error returns the panic value and the stack trace.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack) }

// NewPanicError records the stack of a panic being recovered.
func NewPanicError(v any) *PanicError { return &PanicError{Value: v, Stack: debug.Stack()} }

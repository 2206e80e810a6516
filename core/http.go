package core

import (
	"io"
	"net/http"
)

// HTTP returns an http.Handler that answers with h. The request context of
// the router (see [FromContext]) is passed to h; outside a router one is
// built from the request. Errors are written with [WriteError].
func HTTP(h Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Serve(w, r, h, Prepare(r))
	})
}

// Serve answers r with h for the request context req (see [Prepare]): the
// response with [WriteResponse], an error with [WriteError].
func Serve(w http.ResponseWriter, r *http.Request, h Handler, req *Request) {
	resp, err := h.Handle(r.Context(), req)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteResponse(w, r, resp)
}

// Prepare returns the request context of r for a [Handler]: the router's, or a
// new one built from r, with Header, Body and ContentLength filled in, and
// Identity the caller that r's context carries ([IdentityFromContext]).
func Prepare(r *http.Request) *Request {
	req := FromContext(r.Context())
	if req == nil {
		return newRequest(r)
	}
	if req.Header == nil {
		req.Header = r.Header
	}
	req.Identity = IdentityFromContext(r.Context())
	return req
}

// WriteResponse writes resp: status line with its reason phrase, headers
// (Content-Type defaults to text/plain), cookies and the body, or the
// Content served with http.ServeContent. A nil resp is 200 OK, empty. A HEAD
// request gets the same header, Content-Length included, and no body. A
// Stream is written with [WriteStream] and default options.
func WriteResponse(w http.ResponseWriter, r *http.Request, resp *Response) {
	if resp == nil {
		resp = &Response{}
	}
	if resp.Stream != nil {
		WriteStream(w, r, resp, StreamOptions{})
		return
	}
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	switch {
	case resp.ContentType != "":
		setContentType(h, resp.ContentType)
	case h.Get("Content-Type") == "":
		setContentType(h, TypePlain)
	}
	for _, c := range resp.Cookies {
		http.SetCookie(w, c)
	}
	if c := resp.Content; c != nil {
		if cl, ok := c.ReaderAt.(io.Closer); ok {
			defer cl.Close()
		}
		http.ServeContent(w, r, c.Name, c.ModTime, io.NewSectionReader(c.ReaderAt, 0, c.Size))
		return
	}
	code := resp.Code
	if code == 0 {
		code = http.StatusOK
	}
	h["Content-Length"] = contentLength(len(resp.Body))
	WriteStatus(w, r, code, resp.Reason)
	if r.Method != http.MethodHead && len(resp.Body) > 0 {
		_, _ = w.Write(resp.Body)
	}
}

// Value returns a 200 response with v rendered in the representation the
// request asks for (its ACCEPT variable), as [Render] renders it. A nil v
// gives an empty body.
//
// For a request context of the [Router], the first response Value makes is
// part of the router's state of the request, with the body rendered into a
// reused buffer: it is valid until the route's handler returns, like the
// request context itself, so a handler answers with it and keeps no part of
// it.
func Value(req *Request, v any) *Response {
	x := req.x
	if x == nil || x.respUsed {
		if v == nil {
			return &Response{}
		}
		ct, body := appendRendered(make([]byte, 0, 512), req.Accept(), req, v)
		return &Response{ContentType: ct, Body: body}
	}
	x.respUsed = true
	x.resp = Response{}
	if v == nil {
		return &x.resp
	}
	if x.buf == nil {
		x.buf = make([]byte, 0, 512)
	}
	ct, body := appendRendered(x.buf[:0], req.Accept(), req, v)
	x.buf = body[:0]
	x.resp.ContentType, x.resp.Body = ct, body
	return &x.resp
}

// htmlPageOf returns the page of an HTML answer to req: titled with the
// path of the resource, linking with the LINK_PREFIX variable.
func htmlPageOf(req *Request) HTMLPage {
	return HTMLPage{Title: req.Consumed + req.Path, LinkPrefix: req.Var(VarLinkPrefix)}
}

// appendRendered appends v rendered as [Render] does to dst (an HTML page as
// htmlPageOf(req) describes it, an untitled one for a nil req) and returns
// the Content-Type and the extended buffer.
func appendRendered(dst []byte, typ string, req *Request, v any) (string, []byte) {
	switch t := Negotiate(typ); t {
	case TypeJSON:
		return t, AppendJSON(dst, v)
	case TypeXML:
		return t, AppendXML(dst, v)
	case TypeHTML:
		var page HTMLPage
		if req != nil {
			page = htmlPageOf(req)
		}
		return ContentTypeHTML, AppendHTML(dst, page, v)
	default:
		return t, AppendText(dst, v)
	}
}

// contentTypes holds the header values of the types Render chooses, shared
// so that an answer costs no allocation for them.
var contentTypes = map[string][]string{
	TypeJSON:        {TypeJSON},
	TypeXML:         {TypeXML},
	TypePlain:       {TypePlain},
	TypeOctet:       {TypeOctet},
	ContentTypeHTML: {ContentTypeHTML},
}

// The shared values of contentTypes, for setContentType.
var (
	contentTypeJSON  = contentTypes[TypeJSON]
	contentTypeXML   = contentTypes[TypeXML]
	contentTypePlain = contentTypes[TypePlain]
	contentTypeOctet = contentTypes[TypeOctet]
)

// Header values of every HTML answer.
var (
	htmlPolicy  = []string{HTMLPolicy}
	htmlNoSniff = []string{"nosniff"}
)

// setHTMLHeaders sets the Content-Type of an HTML answer, its
// Content-Security-Policy ([HTMLPolicy], unless the answer brings a policy
// of its own, as a page with its own scripts must) and
// X-Content-Type-Options nosniff.
func setHTMLHeaders(h http.Header) {
	h["Content-Type"] = contentTypes[ContentTypeHTML]
	if _, own := h["Content-Security-Policy"]; !own {
		h["Content-Security-Policy"] = htmlPolicy
	}
	h["X-Content-Type-Options"] = htmlNoSniff
}

func setContentType(h http.Header, ct string) {
	if ct == ContentTypeHTML {
		setHTMLHeaders(h)
		return
	}
	// A switch on the few shared types, not a lookup in contentTypes:
	// no hash of ct per answer.
	var v []string
	switch ct {
	case TypeJSON:
		v = contentTypeJSON
	case TypeXML:
		v = contentTypeXML
	case TypePlain:
		v = contentTypePlain
	case TypeOctet:
		v = contentTypeOctet
	default:
		h.Set("Content-Type", ct)
		return
	}
	h["Content-Type"] = v
}

package core

import (
	"io"
	"net/http"
	"strconv"
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
// new one built from r, with Header, Body and ContentLength filled in.
func Prepare(r *http.Request) *Request {
	req := FromContext(r.Context())
	if req == nil {
		return newRequest(r)
	}
	if req.Header == nil {
		req.Header = r.Header
	}
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
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	WriteStatus(w, r, code, resp.Reason)
	if r.Method != http.MethodHead && len(resp.Body) > 0 {
		_, _ = w.Write(resp.Body)
	}
}

// Value returns a 200 response with v rendered in the representation the
// request asks for (its ACCEPT variable). A nil v gives an empty body.
func Value(req *Request, v any) *Response {
	if v == nil {
		return &Response{}
	}
	ct, body := Render(req.Accept(), v)
	return &Response{ContentType: ct, Body: body}
}

// contentTypes holds the header values of the types Render chooses, shared
// so that an answer costs no allocation for them.
var contentTypes = map[string][]string{
	TypeJSON:  {TypeJSON},
	TypeXML:   {TypeXML},
	TypePlain: {TypePlain},
	TypeOctet: {TypeOctet},
}

func setContentType(h http.Header, ct string) {
	if v, ok := contentTypes[ct]; ok {
		h["Content-Type"] = v
		return
	}
	h.Set("Content-Type", ct)
}

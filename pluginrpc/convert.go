package pluginrpc

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// Conversions between the contract's types (package core) and the protocol's
// messages. Whatever the host sends, the plugin rebuilds, and the other way
// round; error types do not cross, so errors are mapped explicitly.
//
// Every text field of the protocol is bytes: a Go string holds any bytes
// (a path, a header value, a file name that is not UTF-8), and a proto3
// string field would refuse to marshal those. Each crosses exactly as the Go
// string holds it, empty as nil.

// wire returns the bytes of s for a bytes field.
func wire(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// wireList returns the bytes of each string of ss; nil for none.
func wireList(ss []string) [][]byte {
	if len(ss) == 0 {
		return nil
	}
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = wire(s)
	}
	return out
}

// stringList is the inverse of wireList.
func stringList(bs [][]byte) []string {
	if len(bs) == 0 {
		return nil
	}
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func encodeRoute(r plugins.Route) *pluginv3.Route {
	return &pluginv3.Route{
		Match:      wire(r.Match),
		Rewrite:    wire(r.Rewrite),
		Assign:     wireList(r.Assign),
		Auth:       r.Identity == plugins.IdentityRequired,
		Identity:   pluginv3.IdentityMode(r.Identity),
		HasHandler: r.Handler != nil,
		HasSession: r.Session != nil,
	}
}

// decodeRoute rebuilds a route without its handler.
func decodeRoute(r *pluginv3.Route) plugins.Route {
	return plugins.Route{
		Match:    string(r.GetMatch()),
		Rewrite:  string(r.GetRewrite()),
		Assign:   stringList(r.GetAssign()),
		Identity: decodeIdentityMode(r),
	}
}

// decodeIdentityMode returns the identity mode of r: its identity field, or
// required when only the older auth flag is set. An unknown mode is kept, so
// that the host refuses the route rather than serve it unchecked.
func decodeIdentityMode(r *pluginv3.Route) plugins.IdentityMode {
	if m := r.GetIdentity(); m != pluginv3.IdentityMode_IDENTITY_MODE_NONE {
		if m < 0 || m > 255 {
			return plugins.IdentityMode(255)
		}
		return plugins.IdentityMode(m)
	}
	if r.GetAuth() {
		return plugins.IdentityRequired
	}
	return plugins.IdentityNone
}

// encodeRequest encodes everything of req but its body.
func encodeRequest(req *core.Request) *pluginv3.Request {
	m := &pluginv3.Request{
		Method:        wire(req.Method),
		Path:          wire(req.Path),
		Consumed:      wire(req.Consumed),
		Query:         wire(req.Query),
		Header:        encodeHeader(req.Header),
		ContentLength: req.ContentLength,
		Identity:      encodeIdentity(req.Identity),
	}
	if len(req.Vars) > 0 {
		m.Vars = make([]*pluginv3.Var, 0, len(req.Vars))
		for k, v := range req.Vars {
			m.Vars = append(m.Vars, &pluginv3.Var{Name: wire(k), Value: wire(v)})
		}
	}
	return m
}

// decodeRequestFields rebuilds everything of a request but its body. The
// header is never nil, as in a request the host routed.
func decodeRequestFields(m *pluginv3.Request) *core.Request {
	req := &core.Request{
		Method:        string(m.GetMethod()),
		Path:          string(m.GetPath()),
		Consumed:      string(m.GetConsumed()),
		Query:         string(m.GetQuery()),
		Header:        decodeHeader(m.GetHeader()),
		ContentLength: m.GetContentLength(),
		Identity:      decodeIdentity(m.GetIdentity()),
	}
	if vs := m.GetVars(); len(vs) > 0 {
		req.Vars = make(map[string]string, len(vs))
		for _, v := range vs {
			req.Vars[string(v.GetName())] = string(v.GetValue())
		}
	}
	if req.Header == nil {
		req.Header = make(http.Header)
	}
	return req
}

// encodeResponse encodes everything of resp but its Content.
func encodeResponse(resp *core.Response) *pluginv3.Response {
	return &pluginv3.Response{
		Code:        int32(resp.Code),
		Reason:      wire(resp.Reason),
		ContentType: wire(resp.ContentType),
		Header:      encodeHeader(resp.Header),
		Cookies:     encodeCookies(resp.Cookies),
		Body:        resp.Body,
	}
}

// decodeResponseFields rebuilds everything of a response but its Content.
func decodeResponseFields(r *pluginv3.Response) *core.Response {
	return &core.Response{
		Code:        int(r.GetCode()),
		Reason:      string(r.GetReason()),
		ContentType: string(r.GetContentType()),
		Header:      decodeHeader(r.GetHeader()),
		Cookies:     decodeCookies(r.GetCookies()),
		Body:        r.GetBody(),
	}
}

func encodeHeader(h http.Header) []*pluginv3.Header {
	if len(h) == 0 {
		return nil
	}
	out := make([]*pluginv3.Header, 0, len(h))
	for name, values := range h {
		out = append(out, &pluginv3.Header{Name: wire(name), Values: wireList(values)})
	}
	return out
}

// decodeHeader rebuilds a header; keys are kept as sent (they were already
// canonical on the other side, or deliberately not).
func decodeHeader(hs []*pluginv3.Header) http.Header {
	if len(hs) == 0 {
		return nil
	}
	h := make(http.Header, len(hs))
	for _, e := range hs {
		h[string(e.GetName())] = stringList(e.GetValues())
	}
	return h
}

func encodeTime(t time.Time) *pluginv3.Time {
	if t.IsZero() {
		return nil
	}
	return &pluginv3.Time{Seconds: t.Unix(), Nanos: int32(t.Nanosecond())}
}

func decodeTime(t *pluginv3.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return time.Unix(t.GetSeconds(), int64(t.GetNanos()))
}

func encodeCookies(cs []*http.Cookie) []*pluginv3.Cookie {
	if len(cs) == 0 {
		return nil
	}
	out := make([]*pluginv3.Cookie, 0, len(cs))
	for _, c := range cs {
		if c == nil {
			continue
		}
		out = append(out, &pluginv3.Cookie{
			Name:        wire(c.Name),
			Value:       wire(c.Value),
			Quoted:      c.Quoted,
			Path:        wire(c.Path),
			Domain:      wire(c.Domain),
			Expires:     encodeTime(c.Expires),
			RawExpires:  wire(c.RawExpires),
			MaxAge:      int32(c.MaxAge),
			Secure:      c.Secure,
			HttpOnly:    c.HttpOnly,
			SameSite:    int32(c.SameSite),
			Partitioned: c.Partitioned,
			Raw:         wire(c.Raw),
			Unparsed:    wireList(c.Unparsed),
		})
	}
	return out
}

func decodeCookies(cs []*pluginv3.Cookie) []*http.Cookie {
	if len(cs) == 0 {
		return nil
	}
	out := make([]*http.Cookie, len(cs))
	for i, c := range cs {
		out[i] = &http.Cookie{
			Name:        string(c.GetName()),
			Value:       string(c.GetValue()),
			Quoted:      c.GetQuoted(),
			Path:        string(c.GetPath()),
			Domain:      string(c.GetDomain()),
			Expires:     decodeTime(c.GetExpires()),
			RawExpires:  string(c.GetRawExpires()),
			MaxAge:      int(c.GetMaxAge()),
			Secure:      c.GetSecure(),
			HttpOnly:    c.GetHttpOnly(),
			SameSite:    http.SameSite(c.GetSameSite()),
			Partitioned: c.GetPartitioned(),
			Raw:         string(c.GetRaw()),
			Unparsed:    stringList(c.GetUnparsed()),
		}
	}
	return out
}

func encodeIdentity(id *core.Identity) *pluginv3.Identity {
	if id == nil {
		return nil
	}
	return &pluginv3.Identity{Id: id.ID, Email: wire(id.Email)}
}

func decodeIdentity(id *pluginv3.Identity) *core.Identity {
	if id == nil {
		return nil
	}
	return &core.Identity{ID: id.GetId(), Email: string(id.GetEmail())}
}

// encodeError maps an error: a status error keeps its code and exact
// reason, anything else keeps its text and whether it is (or wraps) the
// error of an ended context.
func encodeError(err error) *pluginv3.Error {
	if se, ok := core.AsStatus(err); ok {
		return &pluginv3.Error{Code: int32(se.Code()), Reason: wire(se.Reason())}
	}
	e := &pluginv3.Error{Message: wire(err.Error())}
	switch {
	case errors.Is(err, context.Canceled):
		e.Cause = pluginv3.Cause_CAUSE_CANCELED
	case errors.Is(err, context.DeadlineExceeded):
		e.Cause = pluginv3.Cause_CAUSE_DEADLINE_EXCEEDED
	}
	return e
}

// decodeError is the inverse of encodeError: the host writes the result
// exactly as it would have written the plugin's own error. A status error is
// rebuilt with core.Status, equal to the plugin's, so errors.Is(err,
// core.ErrNotFound) holds on both sides of the boundary. The error of an
// ended context comes back as itself (context.Canceled, ...) when that is
// all the text said, else as the text wrapping it, so errors.Is finds it.
func decodeError(e *pluginv3.Error) error {
	if e.GetCode() != 0 {
		return core.Status(int(e.GetCode()), string(e.GetReason()))
	}
	msg := string(e.GetMessage())
	var cause error
	switch e.GetCause() {
	case pluginv3.Cause_CAUSE_CANCELED:
		cause = context.Canceled
	case pluginv3.Cause_CAUSE_DEADLINE_EXCEEDED:
		cause = context.DeadlineExceeded
	default:
		return errors.New(msg)
	}
	if msg == cause.Error() {
		return cause
	}
	return &causedError{msg: msg, cause: cause}
}

// causedError is an error's text from the other side of the boundary that
// wrapped the error of an ended context.
type causedError struct {
	msg   string
	cause error
}

func (e *causedError) Error() string { return e.msg }
func (e *causedError) Unwrap() error { return e.cause }

// encodeBodyError maps a failure to read a request body.
func encodeBodyError(err error) *pluginv3.BodyError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &pluginv3.BodyError{TooLargeLimit: max(mbe.Limit, 1), Message: wire(err.Error())}
	}
	return &pluginv3.BodyError{Message: wire(err.Error())}
}

// decodeBodyError rebuilds a body read failure so that core.ReadBody maps it
// as it would have in process (413 for a body over the limit).
func decodeBodyError(e *pluginv3.BodyError) error {
	if e.GetTooLargeLimit() > 0 {
		return &http.MaxBytesError{Limit: e.GetTooLargeLimit()}
	}
	return errors.New(string(e.GetMessage()))
}

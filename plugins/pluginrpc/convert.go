package pluginrpc

import (
	"errors"
	"net/http"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins/pluginrpc/pluginv1"
)

// Conversions between the contract's types (package core) and the protocol's
// messages. Whatever the host sends, the plugin rebuilds, and the other way
// round; error types do not cross, so errors are mapped explicitly.

func encodeHeader(h http.Header) []*pluginv1.Header {
	if len(h) == 0 {
		return nil
	}
	out := make([]*pluginv1.Header, 0, len(h))
	for name, values := range h {
		out = append(out, &pluginv1.Header{Name: name, Values: values})
	}
	return out
}

// decodeHeader rebuilds a header; keys are kept as sent (they were already
// canonical on the other side, or deliberately not).
func decodeHeader(hs []*pluginv1.Header) http.Header {
	if len(hs) == 0 {
		return nil
	}
	h := make(http.Header, len(hs))
	for _, e := range hs {
		h[e.GetName()] = e.GetValues()
	}
	return h
}

func encodeTime(t time.Time) *pluginv1.Time {
	if t.IsZero() {
		return nil
	}
	return &pluginv1.Time{Seconds: t.Unix(), Nanos: int32(t.Nanosecond())}
}

func decodeTime(t *pluginv1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return time.Unix(t.GetSeconds(), int64(t.GetNanos()))
}

func encodeCookies(cs []*http.Cookie) []*pluginv1.Cookie {
	if len(cs) == 0 {
		return nil
	}
	out := make([]*pluginv1.Cookie, 0, len(cs))
	for _, c := range cs {
		if c == nil {
			continue
		}
		out = append(out, &pluginv1.Cookie{
			Name:        c.Name,
			Value:       c.Value,
			Quoted:      c.Quoted,
			Path:        c.Path,
			Domain:      c.Domain,
			Expires:     encodeTime(c.Expires),
			RawExpires:  c.RawExpires,
			MaxAge:      int32(c.MaxAge),
			Secure:      c.Secure,
			HttpOnly:    c.HttpOnly,
			SameSite:    int32(c.SameSite),
			Partitioned: c.Partitioned,
			Raw:         c.Raw,
			Unparsed:    c.Unparsed,
		})
	}
	return out
}

func decodeCookies(cs []*pluginv1.Cookie) []*http.Cookie {
	if len(cs) == 0 {
		return nil
	}
	out := make([]*http.Cookie, len(cs))
	for i, c := range cs {
		out[i] = &http.Cookie{
			Name:        c.GetName(),
			Value:       c.GetValue(),
			Quoted:      c.GetQuoted(),
			Path:        c.GetPath(),
			Domain:      c.GetDomain(),
			Expires:     decodeTime(c.GetExpires()),
			RawExpires:  c.GetRawExpires(),
			MaxAge:      int(c.GetMaxAge()),
			Secure:      c.GetSecure(),
			HttpOnly:    c.GetHttpOnly(),
			SameSite:    http.SameSite(c.GetSameSite()),
			Partitioned: c.GetPartitioned(),
			Raw:         c.GetRaw(),
			Unparsed:    c.GetUnparsed(),
		}
	}
	return out
}

func encodeIdentity(id *core.Identity) *pluginv1.Identity {
	if id == nil {
		return nil
	}
	return &pluginv1.Identity{Id: id.ID, Email: id.Email}
}

func decodeIdentity(id *pluginv1.Identity) *core.Identity {
	if id == nil {
		return nil
	}
	return &core.Identity{ID: id.GetId(), Email: id.GetEmail()}
}

// encodeError maps a handler's error: a status error keeps its code and
// exact reason, anything else keeps its text.
func encodeError(err error) *pluginv1.Error {
	if se, ok := core.AsStatus(err); ok {
		return &pluginv1.Error{Code: int32(se.Code), Reason: se.Reason}
	}
	return &pluginv1.Error{Message: err.Error()}
}

// decodeError is the inverse of encodeError: the host writes the result
// exactly as it would have written the plugin's own error.
func decodeError(e *pluginv1.Error) error {
	if e.GetCode() != 0 {
		return &core.StatusError{Code: int(e.GetCode()), Reason: e.GetReason()}
	}
	return errors.New(e.GetMessage())
}

// encodeBodyError maps a failure to read a request body.
func encodeBodyError(err error) *pluginv1.BodyError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &pluginv1.BodyError{TooLargeLimit: max(mbe.Limit, 1), Message: err.Error()}
	}
	return &pluginv1.BodyError{Message: err.Error()}
}

// decodeBodyError rebuilds a body read failure so that core.ReadBody maps it
// as it would have in process (413 for a body over the limit).
func decodeBodyError(e *pluginv1.BodyError) error {
	if e.GetTooLargeLimit() > 0 {
		return &http.MaxBytesError{Limit: e.GetTooLargeLimit()}
	}
	return errors.New(e.GetMessage())
}

package call

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/reso-project/reso/core"
)

// object reads the request body as a JSON object; an empty body is an
// empty one. Anything else answers 400 Invalid JSON content.
func object(req *core.Request) (core.Record, error) {
	b, err := core.ReadBody(req.Body)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(b)) == "" {
		return core.Record{}, nil
	}
	v, err := core.DecodeJSON(b)
	if err != nil {
		return nil, core.ErrInvalidJSON
	}
	r, ok := v.(core.Record)
	if !ok {
		return nil, core.ErrInvalidJSON
	}
	return r, nil
}

// text returns the string field name of r, "" when r has none; a value
// of another type answers 400 Invalid <Name>.
func text(r core.Record, name string) (string, error) {
	v, ok := r.Get(name)
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", invalid(name)
	}
	return s, nil
}

// required returns the non-empty string field name of r, or 400 Missing
// <Name>.
func required(r core.Record, name string) (string, error) {
	s, err := text(r, name)
	if err == nil && s == "" {
		err = errMissingFields[name]
	}
	return s, err
}

// leaseBody reads the body of a POST that creates a lease: a JSON object
// with the non-empty string field name and the lifetime it asks for,
// bounded by max (see expires).
func leaseBody(req *core.Request, name string, max time.Duration) (r core.Record, value string, exp int64, err error) {
	if r, err = object(req); err != nil {
		return nil, "", 0, err
	}
	if value, err = required(r, name); err != nil {
		return nil, "", 0, err
	}
	if exp, err = expires(r, max); err != nil {
		return nil, "", 0, err
	}
	return r, value, exp, nil
}

// invalid returns the 400 error of a field of the wrong type.
func invalid(name string) core.StatusError {
	return core.Status(http.StatusBadRequest, "Invalid "+strings.ToUpper(name[:1])+name[1:])
}

// expires returns the lifetime field "expires" of r asks for, bounded by
// max, in whole seconds: DefaultExpires (bounded too) when r has none;
// 400 Invalid Expires unless it is a whole number of seconds, at least 1.
func expires(r core.Record, max time.Duration) (int64, error) {
	limit := int64(max / time.Second)
	if limit < 1 {
		limit = 1
	}
	v, ok := r.Get("expires")
	if !ok {
		return min(int64(DefaultExpires/time.Second), limit), nil
	}
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case float64: // 2.0, 1e1, or a whole number past int64
		if x != math.Trunc(x) || x < 1 {
			return 0, errExpires
		}
		n = math.MaxInt64
		if x < math.MaxInt64 {
			n = int64(x)
		}
	default:
		return 0, errExpires
	}
	if n < 1 {
		return 0, errExpires
	}
	return min(n, limit), nil
}

// without returns r without the fields named.
func without(r core.Record, names ...string) core.Record {
	out := make(core.Record, 0, len(r))
next:
	for _, f := range r {
		for _, n := range names {
			if f.Name == n {
				continue next
			}
		}
		out = append(out, f)
	}
	return out
}

// created answers 201 Created with Location: url and {"id", "url"}.
func created(req *core.Request, id, url string) *core.Response {
	resp := core.Value(req, core.Record{{Name: "id", Value: id}, {Name: "url", Value: url}})
	resp.Code = http.StatusCreated
	resp.Header = http.Header{"Location": {escapeURL(url)}}
	return resp
}

// escapeURL percent-encodes what a header must not carry raw in a path.
func escapeURL(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c <= ' ' || c >= 0x7f || c == '%' || c == '?' || c == '#' {
			b.WriteString("%")
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

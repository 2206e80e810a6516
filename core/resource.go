package core

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
)

// Getter serves GET. See [Resource].
type Getter interface {
	Get(ctx context.Context, req *Request) (any, error)
}

// Putter serves PUT. req.Entity holds the body.
type Putter interface {
	Put(ctx context.Context, req *Request) (any, error)
}

// Poster serves POST. req.Entity holds the body.
type Poster interface {
	Post(ctx context.Context, req *Request) (any, error)
}

// Deleter serves DELETE.
type Deleter interface {
	Delete(ctx context.Context, req *Request) (any, error)
}

// Headable serves HEAD. A resource without it answers HEAD with its Getter
// (the body is then left out by the writers).
type Headable interface {
	Head(ctx context.Context, req *Request) (any, error)
}

// Resource returns a [Handler] that dispatches to the methods res implements
// (docs/wire.md#request-bodies): a method it does not implement answers 405
// Method Not Allowed. HEAD goes to Head, else to Get (405 when res has neither); the
// answer is the same as GET's, and [WriteResponse] leaves the body out. For PUT and POST the body is read first (unless a route preset
// BODY): a request that declares neither Content-Length nor chunked
// encoding answers 400 Invalid Content-Length, and a non-empty body whose
// CONTENT_TYPE (the route variable, else the Content-Type header) is
// application/json in any case must parse as JSON or the answer is 400
// Invalid JSON content. req.Entity is then the value [DecodeJSON] returns
// (objects as a [Record] in document order, arrays as a [List]), or the
// body text.
// The result is rendered in the type named by ACCEPT.
//
// Resource reads the whole body: limit its size in front (the plugin host
// wraps bodies with http.MaxBytesReader; a body over such a limit answers 413).
func Resource(res any) Handler {
	return &resource{res: res}
}

type resource struct {
	res any
}

func (rs *resource) Handle(ctx context.Context, req *Request) (*Response, error) {
	var call func(context.Context, *Request) (any, error)
	switch req.Method {
	case http.MethodGet:
		if g, ok := rs.res.(Getter); ok {
			call = g.Get
		}
	case http.MethodPut:
		if p, ok := rs.res.(Putter); ok {
			call = p.Put
		}
	case http.MethodPost:
		if p, ok := rs.res.(Poster); ok {
			call = p.Post
		}
	case http.MethodDelete:
		if d, ok := rs.res.(Deleter); ok {
			call = d.Delete
		}
	case http.MethodHead:
		if h, ok := rs.res.(Headable); ok {
			call = h.Head
		} else if g, ok := rs.res.(Getter); ok {
			call = g.Get
		}
	}
	if call == nil {
		return nil, ErrMethodNotAllowed
	}
	if req.Method == http.MethodPut || req.Method == http.MethodPost {
		if err := rs.readEntity(req); err != nil {
			return nil, err
		}
	}
	v, err := call(ctx, req)
	if err != nil {
		return nil, err
	}
	return Value(req, v), nil
}

func (rs *resource) readEntity(req *Request) error {
	var body []byte
	if preset, ok := req.Vars[VarBody]; ok {
		body = []byte(preset)
	} else {
		if req.ContentLength < -1 {
			return ErrInvalidLength
		}
		b, err := ReadBody(req.Body)
		if err != nil {
			return err
		}
		body = b
	}
	ct := req.Vars[VarContentType]
	if ct == "" && req.Header != nil {
		ct = req.Header.Get("Content-Type")
	}
	if strings.EqualFold(strings.TrimSpace(ct), TypeJSON) && len(body) > 0 {
		v, err := DecodeJSON(body)
		if err != nil {
			return ErrInvalidJSON
		}
		req.Entity = v
		return nil
	}
	req.Entity = string(body)
	return nil
}

// ReadBody reads r to the end; a body cut by http.MaxBytesReader answers 413
// Request Entity Too Large, any other read failure 400 Error Reading Body. A
// nil r reads as empty.
func ReadBody(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	var buf bytes.Buffer
	_, err := buf.ReadFrom(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, ErrBodyTooLarge
		}
		return nil, Status(http.StatusBadRequest, "Error Reading Body")
	}
	return buf.Bytes(), nil
}

var _ Handler = (*resource)(nil)

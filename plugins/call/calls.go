package call

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
)

// call serves /call, /call/<id> and /call/<id>/<participant>
// (docs/call.md#calls).
func (h *handler) call(ctx context.Context, req *core.Request) (*core.Response, error) {
	segs, err := segments(req.Path)
	if err != nil || len(segs) > 2 {
		return nil, errNotFound
	}
	who, admin := caller(req)
	path := "/call"
	for _, s := range segs {
		path += "/" + s
	}
	if stream, full, err := doors.StreamWanted(req); err != nil {
		return nil, err
	} else if stream {
		return doors.Watch(ctx, h.st.t, req, path, full)
	}
	switch len(segs) {
	case 0:
		if req.Method != http.MethodPost {
			return nil, errMethod
		}
		return h.newCall(ctx, req, who)
	case 1:
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			return h.showCall(ctx, req, path)
		case http.MethodPost:
			return h.join(ctx, req, who, path)
		case http.MethodPut:
			return h.renew(ctx, req, who, admin, path, path, false)
		case http.MethodDelete:
			return h.endCall(ctx, req, who, admin, path)
		}
	case 2:
		switch req.Method {
		case http.MethodPut:
			return h.renew(ctx, req, who, admin, path, "/call/"+segs[0], true)
		case http.MethodDelete:
			if err := h.mayChange(ctx, who, admin, path, "/call/"+segs[0]); err != nil {
				return nil, err
			}
			if _, err := h.st.must(ctx, who, msg{Method: "DELETE", Resource: path}); err != nil {
				return nil, err
			}
			return core.Value(req, core.Record{}), nil
		}
	}
	return nil, errMethod
}

// newCall answers POST /call: a call with the body's fields, leased.
func (h *handler) newCall(ctx context.Context, req *core.Request, who string) (*core.Response, error) {
	r, err := object(req)
	if err != nil {
		return nil, err
	}
	exp, err := expires(r, h.maxExpires)
	if err != nil {
		return nil, err
	}
	id := newID()
	url := "/call/" + id
	if err := h.st.create(ctx, who, url, core.AppendJSON(nil, without(r, "expires")), float64(exp), who, nil); err != nil {
		return nil, err
	}
	return created(req, id, url), nil
}

// join answers POST /call/<id>: the caller joins as a participant.
func (h *handler) join(ctx context.Context, req *core.Request, who, path string) (*core.Response, error) {
	r, session, exp, err := leaseBody(req, "session", h.maxExpires)
	if err != nil {
		return nil, err
	}
	if e, err := h.st.record(ctx, path); err != nil {
		return nil, err
	} else if e == nil {
		return nil, errNotFound
	}
	id := newID()
	url := path + "/" + id
	p := append(core.Record{{Name: "url", Value: url}, {Name: "session", Value: session}}, without(r, "url", "session", "expires")...)
	if err := h.st.create(ctx, who, url, core.AppendJSON(nil, p), float64(exp), who, nil); err != nil {
		return nil, err
	}
	return created(req, id, url), nil
}

// showCall answers GET /call/<id>: the call's fields and its children.
func (h *handler) showCall(ctx context.Context, req *core.Request, path string) (*core.Response, error) {
	e, err := h.st.record(ctx, path)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, errNotFound
	}
	v, err := core.DecodeJSON(e)
	if err != nil {
		return nil, errTree
	}
	rec, _ := v.(core.Record)
	cs, err := h.st.children(ctx, path)
	if err != nil {
		return nil, err
	}
	children := core.List{}
	for _, c := range cs {
		var p struct {
			URL     string `json:"url"`
			Session string `json:"session"`
		}
		if json.Unmarshal(c.Entity, &p) == nil && p.URL != "" {
			children = append(children, core.Record{{Name: "url", Value: p.URL}, {Name: "session", Value: p.Session}})
		}
	}
	out := append(without(rec, "children"), core.Field{Name: "children", Value: children})
	return core.Value(req, out), nil
}

// mayChange answers 403 unless who may change the resource at path: the
// administrator, its owner or the owner of the call at callPath; 404 when
// it is not there.
func (h *handler) mayChange(ctx context.Context, who string, admin bool, path, callPath string) error {
	if e, err := h.st.record(ctx, path); err != nil {
		return err
	} else if e == nil {
		return errNotFound
	}
	if admin {
		return nil
	}
	for _, p := range []string{path, callPath} {
		o, err := h.st.owner(ctx, p)
		if err != nil {
			return err
		}
		if o == who {
			return nil
		}
	}
	return errForbidden
}

// renew answers PUT of a call or a participant: leased again; a call's
// fields are replaced by those of a non-empty body.
func (h *handler) renew(ctx context.Context, req *core.Request, who string, admin bool, path, callPath string, participant bool) (*core.Response, error) {
	r, err := object(req)
	if err != nil {
		return nil, err
	}
	exp, err := expires(r, h.maxExpires)
	if err != nil {
		return nil, err
	}
	if participant {
		err = h.mayChange(ctx, who, admin, path, callPath)
	} else {
		err = h.mayChange(ctx, who, admin, path, path)
	}
	if err != nil {
		return nil, err
	}
	entity, err := h.st.record(ctx, path)
	if err != nil {
		return nil, err
	}
	if fields := without(r, "expires"); !participant && len(fields) > 0 {
		entity = core.AppendJSON(nil, fields)
	}
	if entity == nil {
		return nil, errNotFound
	}
	if _, err := h.st.must(ctx, who, msg{Method: "PUT", Resource: path, Entity: entity, Expires: float64(exp)}); err != nil {
		return nil, err
	}
	_, id := split(path)
	return core.Value(req, core.Record{{Name: "id", Value: id}, {Name: "url", Value: path}}), nil
}

// endCall answers DELETE /call/<id>: its participants leave, then it
// ends.
func (h *handler) endCall(ctx context.Context, req *core.Request, who string, admin bool, path string) (*core.Response, error) {
	if err := h.mayChange(ctx, who, admin, path, path); err != nil {
		return nil, err
	}
	if err := h.st.removeAll(ctx, who, path); err != nil {
		return nil, err
	}
	return core.Value(req, core.Record{}), nil
}

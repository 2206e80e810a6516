package call

import (
	"context"
	"net/http"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
)

// inboxRule is the rule of /user/<id>/message: its user alone reads it.
var inboxRule = "self:cruds"

// user serves /user, /user/<id>, /user/<id>/message and
// /user/<id>/message/<mid> (docs/call.md#users-and-inboxes).
func (h *handler) user(ctx context.Context, req *core.Request) (*core.Response, error) {
	segs, err := segments(req.Path)
	if err != nil || len(segs) > 3 || len(segs) >= 2 && segs[1] != "message" {
		return nil, errNotFound
	}
	who, admin := caller(req)
	path := "/user"
	for _, s := range segs {
		path += "/" + s
	}
	if len(segs) == 0 {
		if req.Method != http.MethodPost {
			return nil, errMethod
		}
		return h.newUser(ctx, req, who, admin)
	}
	upath := "/user/" + segs[0]
	rec, owner, err := h.userRecord(ctx, upath)
	if err != nil {
		return nil, err
	}
	mine := admin || who == owner
	if stream, full, err := doors.StreamWanted(req); err != nil {
		return nil, err
	} else if stream {
		return doors.Watch(ctx, h.st.t, req, path, full)
	}
	switch len(segs) {
	case 1:
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			out := append(rec, core.Field{Name: "url", Value: upath},
				core.Field{Name: "login", Value: "/login/" + owner},
				core.Field{Name: "message", Value: upath + "/message"})
			return core.Value(req, out), nil
		case http.MethodDelete:
			if !mine {
				return nil, errForbidden
			}
			// The inbox and its messages go with the record.
			if err := h.st.removeAll(ctx, who, upath); err != nil {
				return nil, err
			}
			return core.Value(req, core.Record{}), nil
		}
	case 2:
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			if !mine {
				return nil, errForbidden
			}
			return h.inbox(ctx, req, path)
		case http.MethodPost:
			return h.leave(ctx, req, who, path)
		}
	case 3:
		if req.Method == http.MethodDelete {
			if !mine {
				return nil, errForbidden
			}
			if _, err := h.st.must(ctx, who, msg{Method: "DELETE", Resource: path}); err != nil {
				return nil, err
			}
			return core.Value(req, core.Record{}), nil
		}
	}
	return nil, errMethod
}

// userRecord returns the fields of the user at path and its owner (its
// e-mail); 404 when there is none.
func (h *handler) userRecord(ctx context.Context, path string) (core.Record, string, error) {
	e, err := h.st.record(ctx, path)
	if err != nil {
		return nil, "", err
	}
	if e == nil {
		return nil, "", errNotFound
	}
	v, err := core.DecodeJSON(e)
	rec, ok := v.(core.Record)
	if err != nil || !ok {
		return nil, "", errTree
	}
	owner, err := h.st.owner(ctx, path)
	if err != nil {
		return nil, "", err
	}
	return rec, owner, nil
}

// newUser answers POST /user: a persistent user record owned by its
// e-mail, with an inbox only it reads.
func (h *handler) newUser(ctx context.Context, req *core.Request, who string, admin bool) (*core.Response, error) {
	r, err := object(req)
	if err != nil {
		return nil, err
	}
	email, err := required(r, "email")
	if err != nil {
		return nil, err
	}
	if email != who && !admin {
		return nil, errForbidden
	}
	id := newID()
	url := "/user/" + id
	if err := h.st.create(ctx, who, url, core.AppendJSON(nil, r), 0, email, nil); err != nil {
		return nil, err
	}
	inbox := url + "/message"
	if err := h.st.create(ctx, who, inbox, []byte("{}"), 0, email, &inboxRule); err != nil {
		return nil, err
	}
	return created(req, id, url), nil
}

// leave answers POST /user/<id>/message: a message from the caller.
func (h *handler) leave(ctx context.Context, req *core.Request, who, inbox string) (*core.Response, error) {
	r, err := object(req)
	if err != nil {
		return nil, err
	}
	if _, err := required(r, "url"); err != nil {
		return nil, err
	}
	id := newID()
	m := append(core.Record{{Name: "id", Value: id}, {Name: "from", Value: who}}, without(r, "id", "from")...)
	url := inbox + "/" + id
	if err := h.st.create(ctx, who, url, core.AppendJSON(nil, m), 0, who, nil); err != nil {
		return nil, err
	}
	return created(req, id, url), nil
}

// inbox answers GET /user/<id>/message: the messages in order.
func (h *handler) inbox(ctx context.Context, req *core.Request, path string) (*core.Response, error) {
	cs, err := h.st.children(ctx, path)
	if err != nil {
		return nil, err
	}
	list := core.List{}
	for _, c := range cs {
		v, err := core.DecodeJSON(c.Entity)
		if err != nil {
			return nil, errTree
		}
		list = append(list, v)
	}
	return core.Value(req, list), nil
}

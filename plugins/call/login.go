package call

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/doors"
)

// loginRule is the rule of /login/<email>: the user's own sessions only.
var loginRule = "self:cruds"

// login serves /login/<email> and /login/<email>/<id> (docs/call.md#logins-and-contacts).
func (h *handler) login(ctx context.Context, req *core.Request) (*core.Response, error) {
	segs, err := segments(req.Path)
	if err != nil || len(segs) == 0 || len(segs) > 2 {
		return nil, errNotFound
	}
	email := segs[0]
	path := "/login/" + email
	who, admin := caller(req)
	if req.Method == "SEND" && len(segs) == 1 {
		return h.send(ctx, req, who, email)
	}
	if req.Method == "CANCEL" && len(segs) == 2 {
		return h.cancel(ctx, req, who, admin, email, segs[1])
	}
	if who != email && !admin {
		return nil, errForbidden
	}
	if err := h.ensureLogin(ctx, email); err != nil {
		return nil, err
	}
	if len(segs) == 1 {
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			stream, full, err := doors.StreamWanted(req)
			if err != nil {
				return nil, err
			}
			if stream {
				resp, err := doors.Watch(ctx, h.st.t, req, path, full)
				if err == nil {
					h.waiting.flush(email)
				}
				return resp, err
			}
			return h.contacts(ctx, req, path)
		case http.MethodPost:
			return h.register(ctx, req, who, path)
		}
		return nil, errMethod
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		cpath := path + "/" + segs[1]
		if stream, full, err := doors.StreamWanted(req); err != nil {
			return nil, err
		} else if stream {
			return doors.Watch(ctx, h.st.t, req, cpath, full)
		}
		e, err := h.st.record(ctx, cpath)
		if err != nil {
			return nil, err
		}
		ct, ok := asContact(segs[1], e)
		if !ok {
			return nil, errNotFound
		}
		return core.Value(req, contactRecord(ct)), nil
	case http.MethodPut:
		return h.refresh(ctx, req, who, path, segs[1])
	case http.MethodDelete:
		if _, err := h.st.must(ctx, who, msg{Method: "DELETE", Resource: path + "/" + segs[1]}); err != nil {
			return nil, err
		}
		return core.Value(req, core.Record{}), nil
	}
	return nil, errMethod
}

// ensureLogin creates /login/<email>, owned by that user with loginRule,
// when it is not there yet.
func (h *handler) ensureLogin(ctx context.Context, email string) error {
	path := "/login/" + email
	e, err := h.st.record(ctx, path)
	if err != nil || e != nil {
		return err
	}
	entity := core.AppendJSON(nil, core.Record{{Name: "email", Value: email}})
	err = h.st.create(ctx, "", path, entity, 0, email, &loginRule)
	if st, ok := core.AsStatus(err); ok && st.Code() == http.StatusConflict {
		return nil // made meanwhile
	}
	if st, ok := core.AsStatus(err); ok && st.Code() == http.StatusNotFound {
		return errNotFound
	}
	return err
}

// contact is a contact as the tree keeps it.
type contact struct {
	ID      string `json:"id"`
	Contact string `json:"contact"`
	Expires int64  `json:"expires"`
}

// contacts answers the live contacts of the login at path.
func (h *handler) contacts(ctx context.Context, req *core.Request, path string) (*core.Response, error) {
	cs, err := h.st.children(ctx, path)
	if err != nil {
		return nil, err
	}
	list := core.List{}
	for _, c := range cs {
		if ct, ok := asContact(c.ID, c.Entity); ok {
			list = append(list, contactRecord(ct))
		}
	}
	return core.Value(req, list), nil
}

// asContact reads the contact of id from its entity: one the plugin
// registered, or one a WebSocket client put there itself (its
// "expires" is then 0: it lives as long as its connection).
func asContact(id string, entity []byte) (contact, bool) {
	var ct contact
	if json.Unmarshal(entity, &ct) != nil || ct.Contact == "" {
		return contact{}, false
	}
	ct.ID = id
	return ct, true
}

// contactRecord is the representation of a contact.
func contactRecord(c contact) core.Record {
	return core.Record{{Name: "id", Value: c.ID}, {Name: "contact", Value: c.Contact}, {Name: "expires", Value: c.Expires}}
}

// register answers POST /login/<email>: a new contact, leased.
func (h *handler) register(ctx context.Context, req *core.Request, who, path string) (*core.Response, error) {
	_, uri, exp, err := leaseBody(req, "contact", h.maxExpires)
	if err != nil {
		return nil, err
	}
	id := newID()
	c := contact{ID: id, Contact: uri, Expires: exp}
	if err := h.st.create(ctx, who, path+"/"+id, core.AppendJSON(nil, contactRecord(c)), float64(exp), who, nil); err != nil {
		return nil, err
	}
	return h.contactAnswer(req, path, c, http.StatusCreated), nil
}

// contactAnswer is {"url", "id", "expires"} of contact c of the login at
// path, with code.
func (h *handler) contactAnswer(req *core.Request, path string, c contact, code int) *core.Response {
	url := path + "/" + c.ID
	resp := core.Value(req, core.Record{{Name: "url", Value: url}, {Name: "id", Value: c.ID}, {Name: "expires", Value: c.Expires}})
	if code == http.StatusCreated {
		resp.Code = code
		resp.Header = http.Header{"Location": {escapeURL(url)}}
	}
	return resp
}

// refresh answers PUT /login/<email>/<id>: the contact leased again, its
// contact replaced when the body gives one (a JSON object, or the contact
// as a text body).
func (h *handler) refresh(ctx context.Context, req *core.Request, who, path, id string) (*core.Response, error) {
	cpath := path + "/" + id
	old, err := h.st.record(ctx, cpath)
	if err != nil {
		return nil, err
	}
	c, ok := asContact(id, old)
	if !ok {
		return nil, errNotFound
	}
	var r core.Record
	if ct := req.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/plain") {
		b, err := core.ReadBody(req.Body)
		if err != nil {
			return nil, err
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			c.Contact = s
		}
		r = core.Record{}
	} else if r, err = object(req); err != nil {
		return nil, err
	}
	uri, err := text(r, "contact")
	if err != nil {
		return nil, err
	}
	if uri != "" {
		c.Contact = uri
	}
	if c.Expires, err = expires(r, h.maxExpires); err != nil {
		return nil, err
	}
	if _, err := h.st.must(ctx, who, msg{Method: "PUT", Resource: cpath, Entity: core.AppendJSON(nil, contactRecord(c)), Expires: float64(c.Expires)}); err != nil {
		return nil, err
	}
	return h.contactAnswer(req, path, c, http.StatusOK), nil
}

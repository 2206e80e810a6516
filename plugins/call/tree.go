package call

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// msg is a message of the channel convention, as the plugin sends it.
type msg struct {
	Method     string          `json:"method"`
	Resource   string          `json:"resource"`
	MsgID      int             `json:"msg_id"`
	Entity     json.RawMessage `json:"entity,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Persistent bool            `json:"persistent,omitempty"`
	ID         string          `json:"id,omitempty"`
	Expires    float64         `json:"expires,omitempty"`
	Rules      *string         `json:"rules,omitempty"`
	Owner      string          `json:"owner,omitempty"`
	Offer      bool            `json:"offer,omitempty"`
}

// reply is the tree's reply to a msg, the fields the plugin reads.
type reply struct {
	Code      string          `json:"code"`
	Reason    string          `json:"reason"`
	Type      *string         `json:"type"`
	Entity    json.RawMessage `json:"entity"`
	ID        string          `json:"id"`
	SentCount int             `json:"sent_count"`
	Owner     *string         `json:"owner"`
}

// errTree answers when the tree cannot be reached or answers nonsense.
var errTree = core.Status(http.StatusServiceUnavailable, "Tree Unavailable")

// store is the plugin's access to the tree: every message is sent as the
// administrator, with from naming the caller in notifications.
type store struct {
	t plugins.Tree
}

// do sends m and returns the tree's reply, successful or not; the error
// is a failure to reach the tree.
func (s store) do(ctx context.Context, from string, m msg) (*reply, error) {
	m.MsgID = 1
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return s.send(ctx, from, b)
}

// send sends the message b, encoded already, as do does.
func (s store) send(ctx context.Context, from string, b []byte) (*reply, error) {
	data, err := s.t.Call(ctx, from, plugins.Admin, b)
	if err != nil {
		if _, ok := core.AsStatus(err); ok {
			return nil, err
		}
		return nil, errTree
	}
	var r reply
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, errTree
	}
	return &r, nil
}

// must sends m and turns a failed reply into its status error: 404 Not
// Found for "not found", 409 for "exists", else 503.
func (s store) must(ctx context.Context, from string, m msg) (*reply, error) {
	r, err := s.do(ctx, from, m)
	if err != nil {
		return nil, err
	}
	switch {
	case r.Code == "success":
		return r, nil
	case r.Reason == "not found", r.Reason == "invalid resource", r.Reason == "invalid id":
		return nil, core.ErrNotFound
	case r.Reason == "exists":
		return nil, core.Status(http.StatusConflict, "Exists")
	}
	return nil, errTree
}

// get returns the entity a GET of resource (a path, or a path and a
// listing query) answers, nil when there is nothing there.
func (s store) get(ctx context.Context, resource string) (json.RawMessage, error) {
	r, err := s.do(ctx, "", msg{Method: "GET", Resource: resource})
	if err != nil {
		return nil, err
	}
	if r.Code != "success" {
		if r.Reason == "not found" {
			return nil, nil
		}
		return nil, errTree
	}
	return r.Entity, nil
}

// record returns the entity at path when it is a JSON object, as every
// entity of the plugin is; nil when there is none (a node that is there
// only for its children reads as the array of their ids).
func (s store) record(ctx context.Context, path string) (json.RawMessage, error) {
	e, err := s.get(ctx, path)
	if err != nil || len(e) == 0 || e[0] != '{' {
		return nil, err
	}
	return e, nil
}

// removeAll deletes the entities of path's subtree, children first.
func (s store) removeAll(ctx context.Context, from, path string) error {
	ids, err := s.get(ctx, path+"?deep=1")
	if err != nil {
		return err
	}
	var kids []string
	if ids != nil {
		if err := json.Unmarshal(ids, &kids); err != nil {
			return errTree
		}
	}
	for _, k := range kids {
		if err := s.removeAll(ctx, from, path+"/"+k); err != nil {
			return err
		}
	}
	if _, err := s.do(ctx, from, msg{Method: "DELETE", Resource: path}); err != nil {
		return err
	}
	return nil
}

// owner returns the owner (creator) of the resource at path, "" when it
// has none or is not there.
func (s store) owner(ctx context.Context, path string) (string, error) {
	r, err := s.do(ctx, "", msg{Method: "RULES", Resource: path})
	if err != nil {
		return "", err
	}
	if r.Code != "success" || r.Owner == nil {
		return "", nil
	}
	return *r.Owner, nil
}

// children returns the entities of the children of path that have one,
// in creation order, with their ids.
func (s store) children(ctx context.Context, path string) ([]child, error) {
	list, err := s.get(ctx, path+"?deep=2")
	if err != nil || list == nil {
		return nil, err
	}
	var cs []child
	if err := json.Unmarshal(list, &cs); err != nil {
		return nil, errTree
	}
	kept := cs[:0]
	for _, c := range cs {
		if len(c.Entity) > 0 && c.Entity[0] == '{' {
			kept = append(kept, c)
		}
	}
	return kept, nil
}

// child is one entry of a deep=2 listing.
type child struct {
	ID     string          `json:"rid"`
	Entity json.RawMessage `json:"entity"`
}

// create makes a resource at path with entity (persistent, or a lease of
// expires seconds when expires > 0), owned by owner, with rule when it is
// not nil. It fails with 409 Exists when path holds an entity.
func (s store) create(ctx context.Context, from, path string, entity []byte, expires float64, owner string, rule *string) error {
	parent, id := split(path)
	m := msg{Method: "POST", Resource: parent, ID: id, Entity: entity, Expires: expires}
	if _, err := s.must(ctx, from, m); err != nil {
		return err
	}
	if owner == "" && rule == nil {
		return nil
	}
	_, err := s.must(ctx, from, msg{Method: "RULES", Resource: path, Owner: owner, Rules: rule})
	return err
}

// split returns the parent path and the last segment of path.
func split(path string) (parent, name string) {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			if i == 0 {
				return "/", path[1:]
			}
			return path[:i], path[i+1:]
		}
	}
	return "/", path
}

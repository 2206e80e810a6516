package call

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	"github.com/reso-project/reso/core"
)

// send answers SEND /login/<email> (docs/call.md#invitations-send-and-cancel):
// the body goes as a NOTIFY to the sessions that follow /login/<email>;
// with none, it waits.
func (h *handler) send(ctx context.Context, req *core.Request, who, email string) (*core.Response, error) {
	b, err := core.ReadBody(req.Body)
	if err != nil {
		return nil, err
	}
	v, err := core.DecodeJSON(b)
	r, ok := v.(core.Record)
	if err != nil || !ok {
		return nil, core.ErrInvalidJSON
	}
	switch cmd, _ := r.Get("command"); cmd {
	case "invite", "cancel", "reject":
	default:
		return nil, errCommand
	}
	path := "/login/" + email
	cs, err := h.st.children(ctx, path)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, errNotLoggedIn
	}
	data := core.AppendJSON(nil, r)
	m, err := newMessage(h.relay.newMessageID(), email, who, data)
	if err != nil {
		return nil, err
	}
	sent, err := h.waiting.offer(ctx, m)
	if err != nil {
		return nil, err
	}
	if sent {
		return core.Value(req, core.Record{{Name: "id", Value: m.id}}), nil
	}
	if err := h.waiting.hold(ctx, m); err != nil {
		return nil, err
	}
	resp := core.Value(req, core.Record{{Name: "id", Value: m.id}})
	resp.Code = http.StatusAccepted
	return resp, nil
}

// cancel answers CANCEL /login/<email>/<id>.
// A message another node's plugin holds is withdrawn there, through the
// relay.
func (h *handler) cancel(ctx context.Context, req *core.Request, who string, admin bool, email, id string) (*core.Response, error) {
	var err error
	if tag := holder(id); tag != "" && tag != h.relay.tag {
		err = h.relay.cancel(ctx, tag, email, id, who, admin)
	} else {
		err = h.waiting.withdraw(email, id, who, admin)
	}
	if err != nil {
		return nil, err
	}
	return core.Value(req, core.Record{}), nil
}

// message is one invitation sent with SEND.
type message struct {
	id, target, sender string
	// wire is the NOTIFY that offers it to the target's sessions, an
	// offer: the tree sends it only when a session receives it, so a
	// message that waits leaves nothing in the tree's history. nil once
	// delivered.
	wire     []byte
	size     int // the bytes of the invitation, counted while it waits
	deadline time.Time
	slot     string // its slot in the tree while it waits (slots.go)

	delivered bool
	sending   bool // an offer of it is under way, w.mu released
}

// newMessage returns the message id with data from sender to target.
func newMessage(id, target, sender string, data []byte) (*message, error) {
	wire, err := json.Marshal(msg{Method: "NOTIFY", Resource: "/login/" + target, MsgID: 1, Data: data, Offer: true})
	if err != nil {
		return nil, err
	}
	return &message{id: id, target: target, sender: sender, wire: wire, size: len(data)}, nil
}

// newID returns a fresh id: 16 random hex digits.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

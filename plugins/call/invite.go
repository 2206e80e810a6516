package call

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/reso-project/reso/core"
)

// Bounds of the invitations waiting for a session.
const (
	maxWaitingPerTarget = 64
	maxWaiting          = 10000
	// retryEvery is how often a waiting invitation is offered again to
	// the target's WebSocket subscribers.
	retryEvery = 250 * time.Millisecond
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
	m := &message{id: newID(), target: email, sender: who, data: data}
	sent, err := h.waiting.offer(ctx, m)
	if err != nil {
		return nil, err
	}
	if sent {
		return core.Value(req, core.Record{{Name: "id", Value: m.id}}), nil
	}
	if err := h.waiting.hold(m); err != nil {
		return nil, err
	}
	resp := core.Value(req, core.Record{{Name: "id", Value: m.id}})
	resp.Code = http.StatusAccepted
	return resp, nil
}

// cancel answers CANCEL /login/<email>/<id>.
func (h *handler) cancel(ctx context.Context, req *core.Request, who string, admin bool, email, id string) (*core.Response, error) {
	if err := h.waiting.withdraw(email, id, who, admin); err != nil {
		return nil, err
	}
	return core.Value(req, core.Record{}), nil
}

// message is one invitation sent with SEND.
type message struct {
	id, target, sender string
	data               []byte
	delivered          bool
	deadline           time.Time
}

// waiting keeps the invitations no session has taken yet, and for as
// long, the ones delivered or withdrawn (so that CANCEL can tell), each
// for at most wait. It offers the waiting ones again every retryEvery,
// and at once when a GET kept open of their target starts.
type waiting struct {
	st   store
	wait time.Duration

	mu       sync.Mutex
	byID     map[string]*message // every message still remembered
	pending  map[string][]*message
	npending int
	running  bool // the retry loop runs
}

func newWaiting(st store, wait time.Duration) *waiting {
	return &waiting{st: st, wait: wait, byID: make(map[string]*message), pending: make(map[string][]*message)}
}

// offer sends m to the target's sessions and reports whether any took
// it; a taken message is remembered as delivered.
func (w *waiting) offer(ctx context.Context, m *message) (bool, error) {
	r, err := w.st.do(ctx, m.sender, msg{Method: "NOTIFY", Resource: "/login/" + m.target, Data: m.data})
	if err != nil {
		return false, err
	}
	if r.Code != "success" || r.SentCount == 0 {
		return false, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forget(time.Now())
	if len(w.byID) < 2*maxWaiting {
		m.delivered, m.deadline = true, time.Now().Add(w.wait)
		w.byID[m.id] = m
	}
	return true, nil
}

// hold keeps m waiting; 503 when too many wait.
func (w *waiting) hold(m *message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.forget(now)
	if w.npending >= maxWaiting || len(w.pending[m.target]) >= maxWaitingPerTarget || len(w.byID) >= 2*maxWaiting {
		return errTooManyWait
	}
	m.deadline = now.Add(w.wait)
	w.byID[m.id] = m
	w.pending[m.target] = append(w.pending[m.target], m)
	w.npending++
	if !w.running {
		w.running = true
		go w.retry()
	}
	return nil
}

// withdraw ends the wait of message id to target, on behalf of who.
func (w *waiting) withdraw(target, id, who string, admin bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forget(time.Now())
	m := w.byID[id]
	if m == nil || m.target != target {
		return errNotFound
	}
	if m.sender != who && !admin {
		return errForbidden
	}
	if m.delivered {
		return errDelivered
	}
	delete(w.byID, id)
	w.unqueue(m)
	return nil
}

// unqueue takes m out of the pending ones. w.mu is held.
func (w *waiting) unqueue(m *message) {
	q := w.pending[m.target]
	for i, x := range q {
		if x == m {
			q = append(q[:i:i], q[i+1:]...)
			w.npending--
			break
		}
	}
	if len(q) == 0 {
		delete(w.pending, m.target)
	} else {
		w.pending[m.target] = q
	}
}

// forget drops the messages whose time is over. w.mu is held.
func (w *waiting) forget(now time.Time) {
	for id, m := range w.byID {
		if now.After(m.deadline) {
			delete(w.byID, id)
			if !m.delivered {
				w.unqueue(m)
			}
		}
	}
}

// flush offers the waiting messages of target now: a GET kept open of it
// has just started.
func (w *waiting) flush(target string) {
	w.mu.Lock()
	q := append([]*message(nil), w.pending[target]...)
	w.mu.Unlock()
	for _, m := range q {
		w.deliver(m)
	}
}

// deliver offers the waiting message m again and marks it delivered when
// a session took it. It holds w.mu meanwhile, so that a CANCEL never
// withdraws a message being delivered, and a message goes out once.
func (w *waiting) deliver(m *message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byID[m.id] != m || m.delivered {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := w.st.do(ctx, m.sender, msg{Method: "NOTIFY", Resource: "/login/" + m.target, Data: m.data})
	if err != nil || r.Code != "success" || r.SentCount == 0 {
		return
	}
	m.delivered = true
	w.unqueue(m)
}

// retry offers the waiting messages every retryEvery while any wait.
func (w *waiting) retry() {
	for {
		time.Sleep(retryEvery)
		w.mu.Lock()
		w.forget(time.Now())
		var all []*message
		for _, q := range w.pending {
			all = append(all, q...)
		}
		if len(all) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for _, m := range all {
			w.deliver(m)
		}
	}
}

// newID returns a fresh id: 16 random hex digits.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

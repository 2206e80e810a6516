package call

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/reso-project/reso/plugins"
)

// A waiting message lives in the memory of the plugin that took its SEND:
// its holder, which offers it again and alone decides whether it was
// delivered or withdrawn. In a fleet (docs/fleet.md) a CANCEL may reach
// another node's plugin: the relay passes it to the holder through the
// tree, whose log reaches every node, and waits for the holder's answer.
//
// Each plugin has a tag, 8 random hex digits, that begins the ids of the
// messages it holds, and its relay client follows /callrelay/<tag>, a path
// with no resource (a NOTIFY needs none; nothing is written, so a start
// takes no seq). A subscription lives on its node alone: a plugin gone
// with its node follows nothing any more. A CANCEL of another tag's message
// is a NOTIFY (an offer: nothing enters the history when nobody takes
// it) of {"op": "cancel", ...} to the holder's path; the holder withdraws
// it as for a CANCEL of its own and answers {"op": "answer", "req",
// "status"} on the asker's path. Only the administrator reads and
// notifies /callrelay (its rule self:cruds, its owner the plugin).

// relayTop is the top-level path of the relays.
const relayTop = "/callrelay"

// Bounds of the relay.
const (
	// relayWait bounds the wait for the holder's answer: its withdraw
	// waits at most for one offer (offerTimeout), then two log round
	// trips.
	relayWait = offerTimeout + 5*time.Second
	// relayRetry is the pause before the relay client connects again
	// after the tree dropped it.
	relayRetry = time.Second
	// maxRelayCalls bounds the CANCELs waiting for an answer.
	maxRelayCalls = 10000
)

// relayMsg is the data of a relay NOTIFY.
type relayMsg struct {
	Op     string `json:"op"` // "cancel" or "answer"
	Req    string `json:"req"`
	From   string `json:"from,omitempty"` // the asker's tag
	ID     string `json:"id,omitempty"`
	Target string `json:"target,omitempty"`
	Who    string `json:"who,omitempty"`
	Admin  bool   `json:"admin,omitempty"`
	Status int    `json:"status,omitempty"`
}

// relay is one plugin's end of the relays.
type relay struct {
	st  store
	tag string
	w   *waiting

	stop chan struct{}
	done chan struct{}

	busy chan struct{} // a place per cancel being answered for another plugin

	mu    sync.Mutex
	calls map[string]chan int // by request id
	ready bool                // the relay client follows its path
}

// newRelay starts the relay of the messages w holds, with a fresh tag.
func newRelay(st store, w *waiting) *relay {
	r := &relay{st: st, tag: newID()[:8], w: w, stop: make(chan struct{}), done: make(chan struct{}),
		busy: make(chan struct{}, maxRelayCalls), calls: make(map[string]chan int)}
	go r.run()
	return r
}

// path is the relay path of tag.
func relayPath(tag string) string { return relayTop + "/" + tag }

// holder returns the tag of the plugin that holds message id, "" when
// id is of no plugin (16 lowercase hex digits).
func holder(id string) string {
	if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
		return ""
	}
	return id[:8]
}

// newMessageID returns a fresh message id held by this plugin.
func (r *relay) newMessageID() string { return r.tag + newID()[8:] }

// run keeps the relay client connected and follows its path until close.
func (r *relay) run() {
	defer close(r.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-r.stop
		cancel()
	}()
	for {
		r.serve(ctx)
		select {
		case <-r.stop:
			return
		case <-time.After(relayRetry):
		}
	}
}

// serve connects the relay client, follows its path and answers what
// comes there, until the client is dropped or ctx ends.
func (r *relay) serve(ctx context.Context) {
	c, err := r.st.t.Connect(ctx, "call-relay-"+newID(), plugins.Admin)
	if err != nil {
		return
	}
	defer c.Disconnect()
	defer r.setReady(false)
	p, _ := json.Marshal(relayPath(r.tag))
	if c.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":`+string(p)+`,"msg_id":1}`)) != nil {
		return
	}
	var buf []plugins.TreeFrame
	for {
		frames, err := c.Next(ctx, buf)
		buf = frames
		for _, f := range frames {
			if f.Seq == 0 {
				var rep reply
				if json.Unmarshal(f.Data, &rep) != nil || rep.Code != "success" {
					return // the subscription failed: start again
				}
				r.setReady(true)
				continue
			}
			r.frame(ctx, f.Data)
		}
		if err != nil {
			return
		}
	}
}

// setReady records whether the relay client follows its path.
func (r *relay) setReady(ok bool) {
	r.mu.Lock()
	r.ready = ok
	r.mu.Unlock()
}

// frame handles one notification of the relay path.
func (r *relay) frame(ctx context.Context, data []byte) {
	var n struct {
		Notify string   `json:"notify"`
		Data   relayMsg `json:"data"`
	}
	if json.Unmarshal(data, &n) != nil || n.Notify != "NOTIFY" {
		return
	}
	m := n.Data
	switch m.Op {
	case "cancel":
		if m.From == "" || m.Req == "" {
			return
		}
		// withdraw may wait for an offer under way: not on the reader.
		// Past maxRelayCalls the asker gets no answer (its wait ends).
		select {
		case r.busy <- struct{}{}:
		default:
			return
		}
		go func() {
			defer func() { <-r.busy }()
			code := statusOf(r.w.withdraw(m.Target, m.ID, m.Who, m.Admin))
			a := relayMsg{Op: "answer", Req: m.Req, Status: code}
			actx, cancel := context.WithTimeout(ctx, relayWait)
			defer cancel()
			_, _ = r.notify(actx, m.From, a)
		}()
	case "answer":
		r.mu.Lock()
		ch := r.calls[m.Req]
		delete(r.calls, m.Req)
		r.mu.Unlock()
		if ch != nil {
			ch <- m.Status
		}
	}
}

// notify offers m to the relay of tag; it reports whether the relay took
// it.
func (r *relay) notify(ctx context.Context, tag string, m relayMsg) (bool, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return false, err
	}
	rep, err := r.st.do(ctx, "", msg{Method: "NOTIFY", Resource: relayPath(tag), Data: data, Offer: true})
	if err != nil {
		return false, err
	}
	return rep.Code == "success" && rep.SentCount > 0, nil
}

// cancel asks the holder tag to withdraw message id to target on behalf
// of who, and returns its answer as withdraw does. A holder that no
// longer follows its path (its node gone) held nothing that still
// waits: 404 Not Found.
func (r *relay) cancel(ctx context.Context, tag, target, id, who string, admin bool) error {
	ctx, cancel := context.WithTimeout(ctx, relayWait)
	defer cancel()
	if err := r.waitReady(ctx); err != nil {
		return err
	}
	r.mu.Lock()
	if len(r.calls) >= maxRelayCalls {
		r.mu.Unlock()
		return errTree
	}
	req := newID()
	ch := make(chan int, 1)
	r.calls[req] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.calls, req)
		r.mu.Unlock()
	}()
	ok, err := r.notify(ctx, tag, relayMsg{Op: "cancel", Req: req, From: r.tag, ID: id, Target: target, Who: who, Admin: admin})
	if err != nil {
		return err
	}
	if !ok {
		return errNotFound
	}
	select {
	case code := <-ch:
		return errorOf(code)
	case <-ctx.Done():
		return errTree
	}
}

// waitReady waits until the relay client follows its path (a plugin
// just started, or whose client the tree dropped): no answer could reach
// this plugin before.
func (r *relay) waitReady(ctx context.Context) error {
	for {
		r.mu.Lock()
		ok := r.ready
		r.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return errTree
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// close stops the relay and waits for it, as long as ctx allows.
func (r *relay) close(ctx context.Context) error {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// statusOf is the HTTP status of withdraw's outcome.
func statusOf(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, errForbidden):
		return http.StatusForbidden
	case errors.Is(err, errDelivered):
		return http.StatusConflict
	}
	return http.StatusNotFound
}

// errorOf is the error of withdraw that status stands for.
func errorOf(status int) error {
	switch status {
	case http.StatusOK:
		return nil
	case http.StatusForbidden:
		return errForbidden
	case http.StatusConflict:
		return errDelivered
	case http.StatusNotFound:
		return errNotFound
	}
	return errTree
}

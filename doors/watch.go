package doors

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/core"
)

// errTreeUnavailable answers when the tree cannot be reached (an isolated
// plugin whose host connection broke) or dropped a stream's client before
// it started.
var errTreeUnavailable = core.Status(http.StatusServiceUnavailable, "Tree Unavailable")

// treeError is the error to answer for a failure to reach the tree: a
// status error or the end of ctx as it is, anything else 503.
func treeError(ctx context.Context, err error) error {
	if _, ok := core.AsStatus(err); ok {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errTreeUnavailable
}

// watcher is the event source of a GET kept open (see [Door]).
type watcher struct {
	c        core.TreeClient
	path     string // the subscribed path
	resource string // what GET reads
	full     bool

	buf      []core.TreeFrame
	pending  []core.Event
	replies  int    // replies read: the first is SUBSCRIBE's, then GETs'
	inflight int    // GETs sent and not answered
	stale    bool   // full: a change came after the last GET was sent
	resumed  bool   // the tree replayed every change since Last-Event-ID
	lastSeq  uint64 // of the last notification read
	epoch    string // of the tree's history, from SUBSCRIBE's reply
	err      error  // what Next returns once pending is empty
	nextID   int
}

// Watch answers req with a GET kept open (see [Door]) of resource, a tree
// path with an optional [attr] or listing query: a stream of its state,
// then of every notification (full false) or of the state after each
// change (full true), read with the identity of req's caller, whose
// permissions the tree checks as a read. Other plugins whose resources
// live in the tree use it for their own GETs kept open; [StreamWanted]
// tells when a request asks for one.
//
// In an isolated plugin whose host offers it, the host runs the stream
// on its own tree with its own copy of req (the plugin's req is one), and
// the answer carries the host's stream (see watchSplicer).
func Watch(ctx context.Context, t core.Tree, req *core.Request, resource string, full bool) (*core.Response, error) {
	if ws, ok := t.(watchSplicer); ok {
		resp, spliced, err := ws.SpliceWatch(ctx, resource, full)
		if spliced {
			if err != nil {
				return nil, treeError(ctx, err)
			}
			return resp, nil
		}
	}
	path, _, _ := strings.Cut(resource, "?")
	path, _, _ = strings.Cut(path, "[")
	var since *uint64
	var epoch string
	if v := req.Header.Get("Last-Event-ID"); v != "" {
		e, n, err := parseEventID(v)
		if err != nil {
			return nil, err
		}
		since, epoch = &n, e
	}
	c, err := t.Connect(ctx, newClientID("watch-"), identity(req))
	if err != nil {
		return nil, treeError(ctx, err)
	}
	w := &watcher{c: c, path: path, resource: resource, full: full, nextID: 1}
	started := false
	defer func() {
		if !started {
			c.Disconnect()
		}
	}()
	// A stream is a read: the tree checks it as one.
	sub := newMessage("SUBSCRIBE", path, w.msgID()).raw("stream", []byte("true"))
	if since != nil {
		sub.uint("since", *since)
	}
	if epoch != "" {
		sub.raw("epoch", channel.AppendString(nil, epoch))
	}
	if err := c.Exec(ctx, sub.bytes()); err != nil {
		return nil, treeError(ctx, err)
	}
	if err := w.get(ctx); err != nil {
		return nil, err
	}
	// Read up to the first state, so that a refusal answers the request.
	for w.replies < 2 {
		frames, err := c.Next(ctx, w.buf)
		w.buf = frames
		for _, f := range frames {
			if f.Seq == 0 && w.replies == 0 {
				w.replies++
				r, perr := parseReply(f.Data)
				if perr != nil {
					return nil, errBadTree
				}
				if r.code != "success" {
					return nil, refusal(req, r.reason)
				}
				w.resumed = since != nil && string(r.get("recovered")) == "true"
				// The replayed notifications came before the reply:
				// their ids get the epoch now.
				if w.epoch = replyEpoch(r); w.epoch != "" {
					for i := range w.pending {
						if w.pending[i].ID != "" {
							w.pending[i].ID = w.epoch + ":" + w.pending[i].ID
						}
					}
				}
				continue
			}
			if f.Seq == 0 && w.replies == 1 {
				r, perr := parseReply(f.Data)
				if perr == nil && r.code != "success" && r.reason != "not found" {
					return nil, refusal(req, r.reason)
				}
			}
			w.frame(f)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errTreeUnavailable
		}
	}
	if err := w.refresh(ctx); err != nil {
		return nil, err
	}
	started = true
	return &core.Response{Stream: w}, nil
}

// parseEventID reads a Last-Event-ID: "<epoch>:<seq>" as the stream's
// events carry it, or the bare "<seq>" of older clients (epoch "").
// Anything else is 400 Invalid Last-Event-ID.
func parseEventID(v string) (epoch string, seq uint64, err error) {
	v = strings.TrimSpace(v)
	e, n, found := strings.Cut(v, ":")
	if !found {
		e, n = "", v
	} else if !channel.ValidEpoch(e) {
		return "", 0, errInvalidEventID
	}
	seq, perr := strconv.ParseUint(n, 10, 64)
	if perr != nil {
		return "", 0, errInvalidEventID
	}
	return e, seq, nil
}

// replyEpoch returns the epoch a SUBSCRIBE reply carries ("" when it has
// none that is valid).
func replyEpoch(r *reply) string {
	var e string
	if json.Unmarshal(r.get("epoch"), &e) != nil || !channel.ValidEpoch(e) {
		return ""
	}
	return e
}

// eventID returns the id of an event at seq: "<epoch>:<seq>", or the bare
// seq from a tree that gave no epoch.
func (w *watcher) eventID(seq uint64) string {
	if w.epoch == "" {
		return strconv.FormatUint(seq, 10)
	}
	return w.epoch + ":" + strconv.FormatUint(seq, 10)
}

// msgID returns the next msg_id.
func (w *watcher) msgID() int {
	w.nextID++
	return w.nextID - 1
}

// get asks the tree for the state.
func (w *watcher) get(ctx context.Context) error {
	if err := w.c.Exec(ctx, newMessage("GET", w.resource, w.msgID()).bytes()); err != nil {
		return treeError(ctx, err)
	}
	w.inflight++
	return nil
}

// frame turns one frame into the events it gives.
func (w *watcher) frame(f core.TreeFrame) {
	if f.Seq != 0 {
		w.lastSeq = f.Seq
		if w.full {
			w.stale = true
			return
		}
		w.pending = append(w.pending, core.Event{ID: w.eventID(f.Seq), Value: core.EventData(f.Data)})
		return
	}
	w.replies++
	if w.replies == 1 {
		return // SUBSCRIBE's, read by watch
	}
	w.inflight--
	first := w.replies == 2
	if first && w.resumed {
		return
	}
	r, err := parseReply(f.Data)
	if err != nil {
		w.err = errBadTree
		return
	}
	var state []byte
	switch {
	case r.code == "success":
		state = r.object()
	case r.reason == "not found":
		state = []byte(`{"resource":` + string(channel.AppendString(nil, w.path)) + `,"type":null,"entity":null}`)
	default:
		// Reading is no longer allowed: the stream ends.
		w.err = io.EOF
		return
	}
	ev := core.Event{Value: core.EventData(state)}
	if w.lastSeq != 0 {
		ev.ID = w.eventID(w.lastSeq)
	}
	if first {
		// The stream begins with the state (docs/channel.md): the
		// notifications that came between the SUBSCRIBE's reply and the
		// GET's (a message sent meanwhile; a change the state already
		// holds, which a client applies again unchanged) follow it.
		w.pending = append([]core.Event{ev}, w.pending...)
		return
	}
	w.pending = append(w.pending, ev)
}

// refresh sends a GET when watch=full saw changes and none is in flight.
func (w *watcher) refresh(ctx context.Context) error {
	if w.full && w.stale && w.inflight == 0 {
		w.stale = false
		return w.get(ctx)
	}
	return nil
}

// Next returns the next event of the stream.
func (w *watcher) Next(ctx context.Context) (core.Event, error) {
	for len(w.pending) == 0 {
		if w.err != nil {
			return core.Event{}, w.err
		}
		frames, err := w.c.Next(ctx, w.buf)
		w.buf = frames
		for _, f := range frames {
			w.frame(f)
		}
		clear(frames)
		if w.err == nil {
			if rerr := w.refresh(ctx); rerr != nil {
				w.err = rerr
			}
		}
		if err != nil && w.err == nil {
			var gone *core.TreeGone
			if errors.As(err, &gone) {
				w.err = io.EOF
			} else {
				w.err = err
			}
		}
	}
	ev := w.pending[0]
	w.pending[0] = core.Event{}
	w.pending = w.pending[1:]
	return ev, nil
}

// Close disconnects the stream's client.
func (w *watcher) Close() error {
	w.c.Disconnect()
	return nil
}

var _ core.EventSource = (*watcher)(nil)

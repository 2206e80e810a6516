package jepsen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// wsConn is one WebSocket connection to the channel door of a node
// (docs/channel.md, "The WebSocket door"), used by one goroutine.
type wsConn struct {
	c      *websocket.Conn
	node   int
	nextID int64
}

// dialWS opens a connection to node's /channel within timeout.
func dialWS(ctx context.Context, env Env, node int, timeout time.Duration) (*wsConn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := websocket.Dialer{HandshakeTimeout: timeout}
	u := "ws" + strings.TrimPrefix(env.URL(node), "http") + "/channel"
	c, resp, err := d.DialContext(ctx, u, nil)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("jepsen: dial %s: %w (%s)", u, err, resp.Status)
		}
		return nil, fmt.Errorf("jepsen: dial %s: %w", u, err)
	}
	c.SetReadLimit(1 << 20)
	return &wsConn{c: c, node: node}, nil
}

// close closes the connection.
func (w *wsConn) close() { _ = w.c.Close() }

// frame is a reply or a notification, the fields the checks read.
type frame struct {
	MsgID     *int64          `json:"msg_id"`
	Code      string          `json:"code"`
	Reason    string          `json:"reason"`
	ID        string          `json:"id"`
	Recovered *bool           `json:"recovered"`
	Epoch     string          `json:"epoch"`
	Notify    string          `json:"notify"`
	Resource  string          `json:"resource"`
	Entity    json.RawMessage `json:"entity"`
	Seq       int64           `json:"seq"`
}

// errNoReply is the error of a call whose reply did not come in time.
var errNoReply = errors.New("jepsen: no reply in time")

// call sends msg (its msg_id added) and waits until timeout for its reply;
// once it came, reads have no deadline again. Notifications that come
// first go to note (when not nil).
func (w *wsConn) call(msg map[string]any, timeout time.Duration, note func(frame, []byte)) (frame, error) {
	w.nextID++
	id := w.nextID
	msg["msg_id"] = id
	b, err := json.Marshal(msg)
	if err != nil {
		return frame{}, err
	}
	deadline := time.Now().Add(timeout)
	_ = w.c.SetWriteDeadline(deadline)
	if err := w.c.WriteMessage(websocket.TextMessage, b); err != nil {
		return frame{}, err
	}
	for {
		_ = w.c.SetReadDeadline(deadline)
		typ, data, err := w.c.ReadMessage()
		if err != nil {
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				return frame{}, errNoReply
			}
			return frame{}, err
		}
		if typ != websocket.TextMessage {
			continue
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			return frame{}, fmt.Errorf("jepsen: frame %q: %w", data, err)
		}
		if f.MsgID == nil {
			if note != nil {
				note(f, data)
			}
			continue
		}
		if *f.MsgID != id {
			return frame{}, fmt.Errorf("jepsen: reply %q to msg_id %d, expected %d", data, *f.MsgID, id)
		}
		_ = w.c.SetReadDeadline(time.Time{})
		return f, nil
	}
}

package channel

import (
	"context"
	"errors"

	tree "github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// CloseTooBig is the close code of a message past the read limit (RFC
// 6455: 1009, message too big).
const CloseTooBig = 1009

// Session is the WebSocket door: a session handler that attaches each
// session to the tree as a client whose id is the session's id.
//
// The handler's goroutine reads the client's messages and passes each
// text message to the tree; one pump goroutine writes what the tree queues
// for the client (replies and notifications, in order), all of them in one
// batch when the transport can. A binary message is ignored: the
// convention's messages are text. When the tree disconnects the client
// (1008 "slow consumer", ...) the session is closed with its code and
// reason; however the session ends, the client is disconnected (its
// transient resources deleted), and the host disconnects it again at the
// session's end should the plugin have died first.
type Session struct {
	Tree plugins.Tree
	// MaxMessage is the largest message accepted, in bytes; a larger one
	// closes the session with 1009 "message too big". 0 or less means
	// DefaultMaxMessage.
	MaxMessage int
}

// ServeSession serves one session until the client or the tree ends it.
func (h *Session) ServeSession(ctx context.Context, req *core.Request, s core.Session) error {
	c, err := h.Tree.Connect(ctx, s.ID(), identity(req))
	if err != nil {
		return err
	}
	defer c.Disconnect()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		defer cancel() // the session is over: stop reading
		pump(ctx, c, s)
	}()
	limit := h.MaxMessage
	if limit <= 0 {
		limit = DefaultMaxMessage
	}
	for {
		m, err := s.Recv(ctx)
		if err != nil {
			break
		}
		if m.Binary {
			continue
		}
		if len(m.Data) > limit {
			_ = s.Close(CloseTooBig, "message too big")
			break
		}
		if err := c.Exec(ctx, m.Data); err != nil {
			break
		}
	}
	c.Disconnect()
	cancel()
	<-pumped
	return nil
}

// pump writes the client's frames to s until the client is gone (the
// session is then closed with the tree's code and reason), a write fails
// or ctx ends.
func pump(ctx context.Context, c plugins.TreeClient, s core.Session) {
	var frames []tree.Frame
	var msgs []core.Message
	for {
		var err error
		frames, err = c.Next(ctx, frames)
		if len(frames) > 0 {
			msgs = msgs[:0]
			for _, f := range frames {
				msgs = append(msgs, core.Message{Data: f.Data})
			}
			if werr := core.SendAll(ctx, s, msgs); werr != nil {
				return
			}
			clear(msgs) // let the frames' bytes go while idle
			clear(frames)
		}
		if err != nil {
			var gone *tree.Gone
			if errors.As(err, &gone) {
				_ = s.Close(gone.Code, gone.Reason)
			}
			return
		}
	}
}

var _ core.SessionHandler = (*Session)(nil)

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"
)

// publisher is the connection the NOTIFYs are sent on. It reads all the
// time (so that it answers the node's pings however long the bench waits
// between two NOTIFYs) and passes the replies on.
type publisher struct {
	conn    *websocket.Conn
	replies chan reply
	done    chan error // the reader's end
}

// dialPublisher opens the publisher's connection to the node at addr.
func dialPublisher(addr string) (*publisher, error) {
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/channel", http.Header{"Origin": {"http://" + addr}})
	if err != nil {
		return nil, fmt.Errorf("publisher: %w", err)
	}
	p := &publisher{conn: conn, replies: make(chan reply, 16), done: make(chan error, 1)}
	go func() {
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				p.done <- err
				return
			}
			var r reply
			if json.Unmarshal(data, &r) == nil && r.MsgID != nil {
				p.replies <- r
			}
		}
	}()
	return p, nil
}

// notify sends NOTIFY number g of the room and waits (at most until
// deadline) for its reply, which must be a success.
func (p *publisher) notify(room string, g int, deadline time.Time) error {
	id := int64(100 + g)
	msg := `{"method":"NOTIFY","resource":"` + room + `","data":{"g":` + strconv.Itoa(g) + `},"msg_id":` + strconv.FormatInt(id, 10) + `}`
	p.conn.SetWriteDeadline(deadline)
	if err := p.conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	for {
		select {
		case r := <-p.replies:
			if *r.MsgID != id {
				continue
			}
			if r.Code != "success" {
				return fmt.Errorf("publisher: NOTIFY %d: %s (%s)", g, r.Code, r.Reason)
			}
			return nil
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("publisher: the connection ended: %w", err)
		case <-time.After(time.Until(deadline)):
			return fmt.Errorf("publisher: no reply to NOTIFY %d by the deadline", g)
		}
	}
}

// close ends the publisher's connection; nil does nothing.
func (p *publisher) close() {
	if p != nil {
		p.conn.Close()
	}
}

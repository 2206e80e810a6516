package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/bench/internal/cluster"
)

// bell is the resource every node's first connection subscribes to.
const bell = "/fleetnodes/bell"

// frame is what the load reads of a message of the channel.
type frame struct {
	Notify string          `json:"notify"`
	Data   json.RawMessage `json:"data"`
	MsgID  *int64          `json:"msg_id"`
	Code   string          `json:"code"`
}

// writes is the connections of the write figure: conns per node, the
// first of each node subscribed to bell and read by a goroutine that
// reports each NOTIFY's number on got.
type writes struct {
	conns []*websocket.Conn
	send  *websocket.Conn // node 0's second connection, or its first
	nodes int
	got   chan int64
	wg    sync.WaitGroup
}

var dialer = websocket.Dialer{
	NetDial:          (&net.Dialer{Timeout: 10 * time.Second}).Dial,
	HandshakeTimeout: 10 * time.Second,
	ReadBufferSize:   1024,
	WriteBufferSize:  1024,
}

// openWrites opens conns connections to each node and subscribes the
// first of each to bell.
func openWrites(nodes []*cluster.Node, conns int, deadline time.Time) (*writes, error) {
	w := &writes{nodes: len(nodes), got: make(chan int64, 1024)}
	for i, n := range nodes {
		for k := range conns {
			c, _, err := dialer.Dial("ws://"+n.Addr+"/channel", http.Header{"Origin": {"http://" + n.Addr}})
			if err != nil {
				w.close()
				return nil, fmt.Errorf("%s: %w", n.Name, err)
			}
			w.conns = append(w.conns, c)
			res := bell
			if k > 0 {
				res = fmt.Sprintf("/fleetnodes/idle/%d/%d", i, k)
			}
			if _, err := call(c, `{"method":"SUBSCRIBE","resource":"`+res+`","msg_id":1}`, 1, deadline); err != nil {
				w.close()
				return nil, fmt.Errorf("%s: %w", n.Name, err)
			}
			switch {
			case k == 0:
				w.wg.Add(1)
				go w.read(c)
			case i == 0 && k == 1:
				w.send = c
			}
		}
	}
	if w.send == nil {
		w.send = w.conns[0] // its reader takes the replies too
	}
	return w, nil
}

// read reports the NOTIFYs of bell c receives until it ends.
func (w *writes) read(c *websocket.Conn) {
	defer w.wg.Done()
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			return
		}
		var f frame
		if json.Unmarshal(data, &f) != nil || f.Notify != "NOTIFY" {
			continue
		}
		if g, err := strconv.ParseInt(string(f.Data), 10, 64); err == nil {
			w.got <- g
		}
	}
}

// run sends n NOTIFYs one at a time (each once the previous reached every
// subscriber, then 20 ms of rest) and returns the p50 and p99 of the time
// from a send to its last delivery.
func (w *writes) run(n int, deadline time.Time) (p50, p99 time.Duration, err error) {
	var ds []time.Duration
	for g := int64(1); g <= int64(n); g++ {
		sent := time.Now()
		msg := `{"method":"NOTIFY","resource":"` + bell + `","data":` + strconv.FormatInt(g, 10) + `}`
		w.send.SetWriteDeadline(deadline)
		if err := w.send.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			return 0, 0, err
		}
		for have := 0; have < w.nodes; {
			select {
			case got := <-w.got:
				if got == g {
					have++
				}
			case <-time.After(time.Until(deadline)):
				return 0, 0, fmt.Errorf("NOTIFY %d reached %d of %d nodes in time", g, have, w.nodes)
			}
		}
		ds = append(ds, time.Since(sent))
		time.Sleep(20 * time.Millisecond)
	}
	return percentile(ds, 0.5), percentile(ds, 0.99), nil
}

// close closes the connections and waits for their readers.
func (w *writes) close() {
	for _, c := range w.conns {
		c.Close()
	}
	w.wg.Wait()
}

// call sends msg on c and reads until the reply with msg_id id.
func call(c *websocket.Conn, msg string, id int64, deadline time.Time) (frame, error) {
	c.SetWriteDeadline(deadline)
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		return frame{}, err
	}
	c.SetReadDeadline(deadline)
	defer c.SetReadDeadline(time.Time{})
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			return frame{}, err
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			return frame{}, fmt.Errorf("%q: %w", data, err)
		}
		if f.MsgID != nil && *f.MsgID == id {
			if f.Code != "success" {
				return f, fmt.Errorf("%s: %s", msg, f.Code)
			}
			return f, nil
		}
	}
}

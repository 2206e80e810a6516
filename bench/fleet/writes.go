package main

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// dial opens a WebSocket connection to the channel door at addr.
func dial(addr string) (*websocket.Conn, error) {
	h := map[string][]string{"Origin": {"http://" + addr}}
	c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/channel", h)
	return c, err
}

// runID numbers the loads, so that each writes to paths of its own.
var runID atomic.Uint64

// writes runs conns connections spread over addrs, each keeping depth
// PUTs to its own new paths in flight (depth 1: one after the other)
// for d; it returns successes per second.
func writes(addrs []string, conns, depth int, d time.Duration, persistent bool) (float64, error) {
	id := runID.Add(1)
	var ok atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	cs := make([]*websocket.Conn, conns)
	for i := range cs {
		c, err := dial(addrs[i%len(addrs)])
		if err != nil {
			return 0, err
		}
		cs[i] = c
	}
	start := time.Now()
	deadline := start.Add(d)
	for i, c := range cs {
		wg.Go(func() {
			defer c.Close()
			n, err := pipeline(c, fmt.Sprintf("/w%d/c%d", id, i), depth, deadline, persistent)
			ok.Add(int64(n))
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return float64(ok.Load()) / time.Since(start).Seconds(), nil
}

// pipeline keeps depth PUTs to new paths under prefix in flight on c
// until deadline, then reads the replies still due; it returns how many
// succeeded.
func pipeline(c *websocket.Conn, prefix string, depth int, deadline time.Time, persistent bool) (int, error) {
	sent, ok := 0, 0
	send := func() error {
		sent++
		msg := fmt.Sprintf(`{"method":"PUT","resource":"%s/r%d","entity":{"j":%d},"persistent":%t,"msg_id":%d}`, prefix, sent, sent, persistent, sent)
		return c.WriteMessage(websocket.TextMessage, []byte(msg))
	}
	for range depth {
		if err := send(); err != nil {
			return ok, err
		}
	}
	for got := 0; got < sent; got++ {
		_, data, err := c.ReadMessage()
		if err != nil {
			return ok, err
		}
		if strings.Contains(string(data), `"code":"success"`) {
			ok++
		}
		if time.Now().Before(deadline) {
			if err := send(); err != nil {
				return ok, err
			}
		}
	}
	return ok, nil
}

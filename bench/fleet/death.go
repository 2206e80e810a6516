package main

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/bench/internal/cluster"
)

// death makes node 0 own n transient resources (over 10 connections),
// subscribes a connection on node 1 to their parent, kills node 0 with
// SIGKILL and returns the time until the last DELETE arrived.
func death(nodes []*cluster.Node, n int) (time.Duration, error) {
	p := fmt.Sprintf("/death%d", runID.Add(1))
	w, err := dial(nodes[1].Addr)
	if err != nil {
		return 0, err
	}
	defer w.Close()
	if err := w.WriteMessage(websocket.TextMessage, []byte(`{"method":"SUBSCRIBE","resource":"`+p+`","msg_id":1}`)); err != nil {
		return 0, err
	}
	if _, _, err := w.ReadMessage(); err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for k := range 10 {
		c, err := dial(nodes[0].Addr)
		if err != nil {
			return 0, err
		}
		wg.Go(func() {
			for j := k; j < n; j += 10 {
				msg := fmt.Sprintf(`{"method":"PUT","resource":"%s/t%d","msg_id":%d}`, p, j, j)
				if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if _, _, err := c.ReadMessage(); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	// The creations first.
	for seen := 0; seen < n; {
		if _, _, err := w.ReadMessage(); err != nil {
			return 0, err
		}
		seen++
	}
	killed := time.Now()
	if err := nodes[0].Kill(); err != nil {
		return 0, err
	}
	_ = w.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for seen := 0; seen < n; {
		_, data, err := w.ReadMessage()
		if err != nil {
			return 0, fmt.Errorf("after %d of %d deletes: %w", seen, n, err)
		}
		if strings.Contains(string(data), `"delete":`) {
			seen++
		}
	}
	return time.Since(killed), nil
}

package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/bench/internal/cluster"
	"github.com/reso-project/reso/bench/internal/proc"
	"github.com/reso-project/reso/bench/internal/wsload"
)

// idleResult is what one idle run measured: each node's RSS growth.
type idleResult struct {
	conns   int
	growth  []int64 // KiB, per node
	dropped int64   // connections that ended while held
}

// perConn is the nodes' summed RSS growth per connection, in KiB.
func (r idleResult) perConn() float64 {
	var sum int64
	for _, g := range r.growth {
		sum += g
	}
	return float64(sum) / float64(max(r.conns, 1))
}

func (r idleResult) String() string {
	var sum int64
	parts := make([]string, len(r.growth))
	for i, g := range r.growth {
		sum += g
		parts[i] = fmt.Sprintf("%+.1f", float64(g)/1024)
	}
	s := fmt.Sprintf("RSS %+.1f MiB", float64(sum)/1024)
	if len(r.growth) > 1 {
		s += " (" + strings.Join(parts, ", ") + " MiB)"
	}
	return s + fmt.Sprintf(", %.1f KiB per connection, %d dropped", r.perConn(), r.dropped)
}

// idleRun counts the idle runs, for their resources' names.
var idleRun atomic.Int64

// idle opens n connections spread evenly over nodes, each subscribed to
// its own resource and then held (reading, so that pings are answered),
// and measures each node's RSS before and, 3 s after the last reply,
// with them; then it closes them.
func idle(nodes []*cluster.Node, n int, timeout time.Duration) (idleResult, error) {
	res := idleResult{conns: n, growth: make([]int64, len(nodes))}
	base := make([]int64, len(nodes))
	for i, nd := range nodes {
		v, err := proc.RSSKB(nd.Pid())
		if err != nil {
			return res, err
		}
		base[i] = v
	}
	prefix := fmt.Sprintf("/idle%d/c", idleRun.Add(1))
	conns := make([]*websocket.Conn, n)
	var dropped atomic.Int64
	var wg sync.WaitGroup
	defer func() {
		for _, c := range conns {
			if c != nil {
				wsload.CloseClean(c)
			}
		}
		wg.Wait()
	}()
	deadline := time.Now().Add(timeout)
	err := wsload.ForEach(n, 64, func(i int) error {
		if time.Now().After(deadline) {
			return fmt.Errorf("connecting took longer than %v", timeout)
		}
		c, err := wsload.Dial(nodes[i%len(nodes)].Addr)
		if err != nil {
			return err
		}
		conns[i] = c
		c.SetReadDeadline(deadline)
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"method":"SUBSCRIBE","resource":"`+prefix+strconv.Itoa(i)+`","msg_id":1}`)); err != nil {
			return err
		}
		_, data, err := c.ReadMessage()
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), `"code":"success"`) {
			return fmt.Errorf("SUBSCRIBE: %s", data)
		}
		c.SetReadDeadline(time.Time{})
		wg.Go(func() {
			_, r, err := c.NextReader()
			for err == nil {
				io.Copy(io.Discard, r)
				_, r, err = c.NextReader()
			}
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				dropped.Add(1)
			}
		})
		return nil
	})
	if err != nil {
		return res, err
	}
	time.Sleep(3 * time.Second) // the nodes settle after the last reply
	for i, nd := range nodes {
		v, err := proc.RSSKB(nd.Pid())
		if err != nil {
			return res, err
		}
		res.growth[i] = v - base[i]
	}
	res.dropped = dropped.Load()
	return res, nil
}

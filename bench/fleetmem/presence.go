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

// result is one run's growth of each node: of its RSS, in KiB, and of its
// live heap (after a collection), in bytes.
type result struct {
	conns  int
	growth []int64
	live   []int64
}

// perConn is node i's RSS growth per connection of the run, in KiB.
func (r result) perConn(i int) float64 { return float64(r.growth[i]) / float64(r.conns) }

// livePerConn is node i's live heap growth per connection of the run, in
// bytes.
func (r result) livePerConn(i int) float64 { return float64(r.live[i]) / float64(r.conns) }

// runs counts the runs, for their rooms' names.
var runs atomic.Int64

// presence opens n connections to nodes[at], each subscribed to one
// shared room and owning one transient entry of a list of members (apart
// from the room, so that an entry is not fanned out to every connection),
// waits until a subscriber of the list on nodes[watch] saw every entry
// created, and measures each node's RSS growth settle after and its live
// heap's growth (after a collection), then calls held
// (when not nil); then it closes them.
func presence(nodes []*cluster.Node, at, watch, n int, timeout, settle time.Duration, held func() error) (result, error) {
	res := result{conns: n, growth: make([]int64, len(nodes)), live: make([]int64, len(nodes))}
	base, baseLive := make([]int64, len(nodes)), make([]int64, len(nodes))
	for i, nd := range nodes {
		v, err := proc.RSSKB(nd.Pid())
		if err != nil {
			return res, err
		}
		base[i] = v
		if baseLive[i], err = liveHeap(nd); err != nil {
			return res, err
		}
	}
	run := runs.Add(1)
	room, members := fmt.Sprintf("/presence%d/room", run), fmt.Sprintf("/presence%d/members", run)
	deadline := time.Now().Add(timeout)

	// The watcher counts the entries created (an UPDATE of the list each),
	// as node watch applies them.
	w, err := wsload.Dial(nodes[watch].Addr)
	if err != nil {
		return res, err
	}
	defer w.Close()
	w.SetReadDeadline(deadline)
	if err := w.WriteMessage(websocket.TextMessage, []byte(`{"method":"SUBSCRIBE","resource":"`+members+`","msg_id":1}`)); err != nil {
		return res, err
	}
	if _, data, err := w.ReadMessage(); err != nil || !strings.Contains(string(data), `"code":"success"`) {
		return res, fmt.Errorf("watcher's SUBSCRIBE: %s %v", data, err)
	}
	created := make(chan error, 1)
	go func() {
		seen := 0
		for seen < n {
			_, data, err := w.ReadMessage()
			if err != nil {
				created <- fmt.Errorf("watcher saw %d of %d entries: %w", seen, n, err)
				return
			}
			if strings.Contains(string(data), `"notify":"UPDATE"`) {
				seen++
			}
		}
		created <- nil
	}()

	conns := make([]*websocket.Conn, n)
	var wg sync.WaitGroup
	defer func() {
		for _, c := range conns {
			if c != nil {
				wsload.CloseClean(c)
			}
		}
		wg.Wait()
	}()
	err = wsload.ForEach(n, 64, func(i int) error {
		if time.Now().After(deadline) {
			return fmt.Errorf("connecting took longer than %v", timeout)
		}
		c, err := wsload.Dial(nodes[at].Addr)
		if err != nil {
			return err
		}
		conns[i] = c
		c.SetReadDeadline(deadline)
		id := strconv.Itoa(i)
		msgs := []string{
			`{"method":"SUBSCRIBE","resource":"` + room + `","msg_id":1}`,
			`{"method":"PUT","resource":"` + members + `/m` + id + `","entity":{"name":"user ` + id + `","state":"online"},"msg_id":2}`,
		}
		for _, m := range msgs {
			if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
				return err
			}
		}
		for replies := 0; replies < 2; {
			_, data, err := c.ReadMessage()
			if err != nil {
				return err
			}
			s := string(data)
			if !strings.Contains(s, `"msg_id"`) {
				continue // a notification of the room
			}
			if !strings.Contains(s, `"code":"success"`) {
				return fmt.Errorf("reply: %s", s)
			}
			replies++
		}
		c.SetReadDeadline(time.Time{})
		wg.Go(func() {
			_, r, err := c.NextReader()
			for err == nil {
				io.Copy(io.Discard, r)
				_, r, err = c.NextReader()
			}
		})
		return nil
	})
	if err != nil {
		return res, err
	}
	if err := <-created; err != nil {
		return res, err
	}
	time.Sleep(settle) // the nodes settle after the last entry
	for i, nd := range nodes {
		v, err := proc.RSSKB(nd.Pid())
		if err != nil {
			return res, err
		}
		res.growth[i] = v - base[i]
	}
	for i, nd := range nodes { // after every RSS: this collects
		v, err := liveHeap(nd)
		if err != nil {
			return res, err
		}
		res.live[i] = v - baseLive[i]
	}
	if held != nil {
		return res, held()
	}
	return res, nil
}

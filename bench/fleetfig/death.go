package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/bench/internal/cluster"
	"github.com/reso-project/reso/bench/internal/wsload"
)

// frame is the part of a message from the server that the death figure
// reads: a reply (msg_id, code) or a notification (notify, seq).
type frame struct {
	Notify    string          `json:"notify"`
	Resource  string          `json:"resource"`
	Data      json.RawMessage `json:"data"`
	Seq       int64           `json:"seq"`
	MsgID     *int64          `json:"msg_id"`
	Code      string          `json:"code"`
	Reason    string          `json:"reason"`
	Recovered *bool           `json:"recovered"`
	Epoch     string          `json:"epoch"`
}

// payload is the data of the publisher's NOTIFYs: their number.
type payload struct {
	G int64 `json:"g"`
}

// deathResult is what the death figure measured.
type deathResult struct {
	deletes    time.Duration   // kill to the last DELETE seen on node 1
	noticed    []time.Duration // kill to the end of the connection seen, per client
	resub      []time.Duration // kill to subscribed again, per client
	recovered  int             // replies with recovered: true
	lost       int64           // connections to nodes 1 and 2 that ended during the run
	dialFails  int64           // dials or SUBSCRIBEs that failed before one succeeded
	acked      int64           // NOTIFYs acknowledged
	expected   int64           // deliveries of acknowledged NOTIFYs owed to the clients
	missed     int64
	duplicated int64
}

func (r deathResult) print(w io.Writer, c config) {
	fmt.Fprintf(w, "node death: kill -9 of node0 holding %d clients (each subscribed to one of %d rooms and owning one transient resource), %d NOTIFY/s to the rooms from node1:\n",
		len(r.resub), c.rooms, c.rate)
	fmt.Fprintf(w, "  kill to the last DELETE of its %d transient resources seen on node1: %v (-fleet-heartbeat %v)\n",
		len(r.resub), r.deletes.Round(time.Millisecond), c.heartbeat)
	fmt.Fprintf(w, "  kill to subscribed again on node1 or node2 with since and epoch: %s (the end of the connection seen: %s); recovered: true %d of %d; failed dials or SUBSCRIBEs before that %d; connections lost afterwards %d\n",
		spread(r.resub), spread(r.noticed), r.recovered, len(r.resub), r.dialFails, r.lost)
	fmt.Fprintf(w, "  notifications: %d NOTIFYs acknowledged, %d deliveries owed, %d received, %d missed, %d duplicated (target: 0 missed, 0 duplicated)\n",
		r.acked, r.expected, r.expected-r.missed, r.missed, r.duplicated)
}

// spread is the p50 and the last of ds, which it sorts.
func spread(ds []time.Duration) string {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return fmt.Sprintf("p50 %v, last %v", ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
}

// deathRun counts the runs, for their resources' names.
var deathRun atomic.Int64

// dclient is a client of the node killed.
type dclient struct {
	id    int
	room  string
	nodes []*cluster.Node
	// The fields below are the reader's; the others read them under mu.
	mu        sync.Mutex
	conn      *websocket.Conn
	epoch     string
	lastSeq   int64
	got       map[int64]int // NOTIFY number -> times received
	noticed   time.Duration // kill to the end of the connection seen; 0: not yet
	resub     time.Duration // kill to subscribed again; 0: not yet
	recovered bool
}

// handle takes a notification in.
func (d *dclient) handle(f *frame) {
	if f.Notify == "" || f.Resource != d.room {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastSeq = max(d.lastSeq, f.Seq)
	if f.Notify == "NOTIFY" {
		var p payload
		if json.Unmarshal(f.Data, &p) == nil {
			d.got[p.G]++
		}
	}
}

// call sends msg on c and reads until the reply with msg_id id, passing
// the notifications on to d.handle.
func (d *dclient) call(c *websocket.Conn, msg string, id int64, deadline time.Time) (frame, error) {
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
				return f, fmt.Errorf("%s: %s (%s)", msg, f.Code, f.Reason)
			}
			return f, nil
		}
		d.handle(&f)
	}
}

// read reads notifications until the connection ends; then, unless
// stopping is set, it connects again to node 1 or 2 (by turns, from its
// id) and subscribes with since and epoch, until the deadline.
func (d *dclient) read(stopping *atomic.Bool, killed *atomic.Int64, lost, dialFails *atomic.Int64, deadline time.Time) {
	for attempt := 0; ; {
		for {
			_, data, err := d.conn.ReadMessage()
			if err != nil {
				break
			}
			var f frame
			if json.Unmarshal(data, &f) == nil {
				d.handle(&f)
			}
		}
		d.conn.Close()
		if stopping.Load() {
			return
		}
		d.mu.Lock()
		if d.resub != 0 {
			lost.Add(1)
		}
		if d.noticed == 0 {
			d.noticed = time.Since(time.Unix(0, killed.Load()))
		}
		d.mu.Unlock()
		for {
			if stopping.Load() || time.Now().After(deadline) {
				return
			}
			node := d.nodes[1+(d.id+attempt)%(len(d.nodes)-1)]
			attempt++
			c, err := wsload.Dial(node.Addr)
			if err != nil {
				dialFails.Add(1)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			d.mu.Lock()
			since, epoch := d.lastSeq, d.epoch
			d.mu.Unlock()
			msg := `{"method":"SUBSCRIBE","resource":"` + d.room + `","since":` + strconv.FormatInt(since, 10) + `,"epoch":"` + epoch + `","msg_id":3}`
			f, err := d.call(c, msg, 3, time.Now().Add(30*time.Second))
			if err != nil {
				dialFails.Add(1)
				c.Close()
				time.Sleep(100 * time.Millisecond)
				continue
			}
			d.mu.Lock()
			d.conn = c
			if stopping.Load() {
				c.Close() // the run's end closed the connections before this one
			}
			if d.resub == 0 {
				d.resub = time.Since(time.Unix(0, killed.Load()))
				d.recovered = f.Recovered != nil && *f.Recovered
			}
			d.epoch = f.Epoch
			d.mu.Unlock()
			break
		}
	}
}

// death runs the death figure: see the package comment.
func death(nodes []*cluster.Node, c config) (deathResult, error) {
	var res deathResult
	prefix := fmt.Sprintf("/death%d", deathRun.Add(1))
	deadline := time.Now().Add(c.timeout)

	// The watcher, on node 1, of the transient resources' parent.
	w, err := wsload.Dial(nodes[1].Addr)
	if err != nil {
		return res, err
	}
	defer w.Close()
	if err := w.WriteMessage(websocket.TextMessage, []byte(`{"method":"SUBSCRIBE","resource":"`+prefix+`/members","msg_id":1}`)); err != nil {
		return res, err
	}
	if _, _, err := w.ReadMessage(); err != nil {
		return res, err
	}
	var created, deleted atomic.Int64
	var lastDelete atomic.Int64 // unix ns
	go func() {
		for {
			_, data, err := w.ReadMessage()
			if err != nil {
				return
			}
			switch s := string(data); {
			case strings.Contains(s, `"update":`):
				created.Add(1)
			case strings.Contains(s, `"delete":`):
				deleted.Add(1)
				lastDelete.Store(time.Now().UnixNano())
			}
		}
	}()

	// The clients of node 0.
	clients := make([]*dclient, c.clients)
	err = wsload.ForEach(c.clients, 64, func(i int) error {
		d := &dclient{id: i, room: prefix + "/room" + strconv.Itoa(i%c.rooms), nodes: nodes, got: map[int64]int{}}
		conn, err := wsload.Dial(nodes[0].Addr)
		if err != nil {
			return err
		}
		d.conn = conn
		clients[i] = d
		f, err := d.call(conn, `{"method":"SUBSCRIBE","resource":"`+d.room+`","msg_id":1}`, 1, deadline)
		if err != nil {
			return err
		}
		d.epoch = f.Epoch
		_, err = d.call(conn, `{"method":"PUT","resource":"`+prefix+`/members/m`+strconv.Itoa(i)+`","entity":{"i":`+strconv.Itoa(i)+`},"msg_id":2}`, 2, deadline)
		return err
	})
	var stopping atomic.Bool
	var readers sync.WaitGroup
	defer func() {
		stopping.Store(true)
		for _, d := range clients {
			if d != nil {
				d.mu.Lock()
				d.conn.Close()
				d.mu.Unlock()
			}
		}
		readers.Wait()
	}()
	if err != nil {
		return res, err
	}
	if err := waitFor(deadline, "the watcher on node1 to see every transient resource created", func() bool { return created.Load() >= int64(c.clients) }); err != nil {
		return res, err
	}
	var killed, lost, dialFails atomic.Int64
	for _, d := range clients {
		readers.Go(func() { d.read(&stopping, &killed, &lost, &dialFails, deadline) })
	}

	// The publisher, on node 1.
	pub, err := wsload.Dial(nodes[1].Addr)
	if err != nil {
		return res, err
	}
	defer pub.Close()
	acked := map[int64]bool{}
	var ackMu sync.Mutex
	var replies atomic.Int64
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		for {
			_, data, err := pub.ReadMessage()
			if err != nil {
				return
			}
			var f frame
			if json.Unmarshal(data, &f) != nil || f.MsgID == nil {
				continue
			}
			replies.Add(1)
			if f.Code == "success" || f.Code == "no subscriber" {
				ackMu.Lock()
				acked[*f.MsgID] = true
				ackMu.Unlock()
			}
		}
	}()
	stopPub := make(chan struct{})
	var sent atomic.Int64
	pubErr := make(chan error, 1)
	go func() {
		tick := time.NewTicker(time.Second / time.Duration(c.rate))
		defer tick.Stop()
		for g := int64(0); ; g++ {
			select {
			case <-stopPub:
				pubErr <- nil
				return
			case <-tick.C:
			}
			msg := `{"method":"NOTIFY","resource":"` + prefix + `/room` + strconv.FormatInt(g%int64(c.rooms), 10) + `","data":{"g":` + strconv.FormatInt(g, 10) + `},"msg_id":` + strconv.FormatInt(g, 10) + `}`
			if err := pub.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				pubErr <- err
				return
			}
			sent.Add(1)
		}
	}()
	time.Sleep(c.before)

	// The kill.
	killed.Store(time.Now().UnixNano())
	if err := nodes[0].Kill(); err != nil {
		return res, err
	}
	if err := waitFor(deadline, "every client of node0 to subscribe again elsewhere", func() bool {
		for _, d := range clients {
			d.mu.Lock()
			r := d.resub
			d.mu.Unlock()
			if r == 0 {
				return false
			}
		}
		return true
	}); err != nil {
		return res, err
	}
	if err := waitFor(deadline, "the watcher on node1 to see every transient resource of node0 deleted", func() bool { return deleted.Load() >= int64(c.clients) }); err != nil {
		return res, err
	}
	res.deletes = time.Duration(lastDelete.Load() - killed.Load())
	time.Sleep(time.Second) // a second of NOTIFYs to the clients in their new places
	close(stopPub)
	if err := <-pubErr; err != nil {
		return res, fmt.Errorf("publisher: %w", err)
	}
	if err := waitFor(deadline, "the publisher's replies", func() bool { return replies.Load() >= sent.Load() }); err != nil {
		return res, err
	}
	ackMu.Lock()
	res.acked = int64(len(acked))
	ackMu.Unlock()
	// Every acknowledged NOTIFY, to every client of its room: wait for them
	// (at most until the deadline), then count.
	owed := func() (expected, missed, dup int64) {
		ackMu.Lock()
		defer ackMu.Unlock()
		for _, d := range clients {
			d.mu.Lock()
			for g := range acked {
				if int(g%int64(c.rooms)) != d.id%c.rooms {
					continue
				}
				expected++
				if d.got[g] == 0 {
					missed++
				}
			}
			for _, n := range d.got {
				if n > 1 {
					dup += int64(n - 1)
				}
			}
			d.mu.Unlock()
		}
		return
	}
	_ = waitFor(deadline, "every acknowledged notification", func() bool { _, m, _ := owed(); return m == 0 })
	res.expected, res.missed, res.duplicated = owed()
	for _, d := range clients {
		d.mu.Lock()
		res.resub = append(res.resub, d.resub)
		res.noticed = append(res.noticed, d.noticed)
		if d.recovered {
			res.recovered++
		}
		d.mu.Unlock()
	}
	res.lost, res.dialFails = lost.Load(), dialFails.Load()
	return res, nil
}

// waitFor polls cond every 50 ms until it holds, or fails at the deadline
// saying what was awaited.
func waitFor(deadline time.Time, what string, cond func() bool) error {
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

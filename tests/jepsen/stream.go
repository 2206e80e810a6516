package jepsen

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// note is one notification a subscriber read.
type note struct {
	Seq   int64 `json:"seq"`
	Value int64 `json:"value"` // the PUT's {"v":Value}
	At    int64 `json:"at"`    // when it was read, on the history's clock
}

// segment is one subscription: from a SUBSCRIBE's reply until its
// connection ended.
type segment struct {
	Node      int    `json:"node"`
	Start     int64  `json:"start"`     // when the reply came
	Since     int64  `json:"since"`     // the since sent, 0 for none
	Recovered bool   `json:"recovered"` // the reply said "recovered": true
	Epoch     string `json:"epoch"`
	Notes     []note `json:"notes"` // the replayed ones first
	End       string `json:"end"`   // why it ended
}

// subscriber follows one resource from node to node: when its connection
// dies it subscribes again on the next node with since and epoch.
type subscriber struct {
	ID       int       `json:"id"`
	Resource string    `json:"resource"`
	Segments []segment `json:"segments"`

	mu sync.Mutex // guards Segments while it runs
}

// saw reports whether the subscriber read the notification of value v.
func (s *subscriber) saw(v int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seg := range s.Segments {
		for _, n := range seg.Notes {
			if n.Value == v {
				return true
			}
		}
	}
	return false
}

// follow runs the subscriber from node until done closes; a failed
// attempt to subscribe is followed by a pause. With hop above 0 the
// subscriber also leaves each node after that time, to resume on the
// next one, faults or not.
func (s *subscriber) follow(w *workers, node int, hop time.Duration, done <-chan struct{}) {
	var since int64
	var epoch string
	for {
		select {
		case <-done:
			return
		default:
		}
		c, err := dialWS(context.Background(), w.env, node, w.timeout)
		if err != nil {
			node = (node + 1) % w.env.Nodes()
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		seg := segment{Node: node, Since: since}
		msg := map[string]any{"method": "SUBSCRIBE", "resource": s.Resource}
		if since > 0 {
			msg["since"] = since
			msg["epoch"] = epoch
		}
		var replayed []note
		f, err := c.call(msg, 15*time.Second, func(f frame, raw []byte) {
			if n, ok := s.parse(w, f, raw); ok {
				replayed = append(replayed, n)
			}
		})
		if err != nil || f.Code != "success" {
			c.close()
			node = (node + 1) % w.env.Nodes()
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		seg.Start = w.hist.Clock.Now()
		seg.Recovered = f.Recovered != nil && *f.Recovered
		seg.Epoch = f.Epoch
		seg.Notes = replayed
		s.mu.Lock()
		s.Segments = append(s.Segments, seg)
		i := len(s.Segments) - 1
		s.mu.Unlock()
		closed := make(chan struct{})
		var hopAfter <-chan time.Time
		if hop > 0 {
			hopAfter = time.After(hop)
		}
		go func() {
			select {
			case <-done:
			case <-closed:
			case <-hopAfter:
			}
			c.close()
		}()
		for {
			typ, data, err := c.c.ReadMessage()
			if err != nil {
				s.mu.Lock()
				s.Segments[i].End = err.Error()
				s.mu.Unlock()
				break
			}
			if typ != websocket.TextMessage {
				continue
			}
			var f frame
			if err := json.Unmarshal(data, &f); err != nil {
				w.hist.Problem(fmt.Sprintf("subscriber %d: frame %q: %v", s.ID, data, err))
				continue
			}
			if n, ok := s.parse(w, f, data); ok {
				s.mu.Lock()
				s.Segments[i].Notes = append(s.Segments[i].Notes, n)
				s.mu.Unlock()
			}
		}
		close(closed)
		s.mu.Lock()
		if ns := s.Segments[i].Notes; len(ns) > 0 {
			since = ns[len(ns)-1].Seq
		}
		epoch = s.Segments[i].Epoch
		s.mu.Unlock()
		node = (node + 1) % w.env.Nodes()
	}
}

// parse reads a notification of the subscriber's resource.
func (s *subscriber) parse(w *workers, f frame, raw []byte) (note, bool) {
	if f.Notify != "PUT" || f.Resource != s.Resource {
		w.hist.Problem(fmt.Sprintf("subscriber %d: unexpected frame %s", s.ID, raw))
		return note{}, false
	}
	var e struct{ V int64 }
	if err := json.Unmarshal(f.Entity, &e); err != nil || f.Seq <= 0 {
		w.hist.Problem(fmt.Sprintf("subscriber %d: unexpected notification %s", s.ID, raw))
		return note{}, false
	}
	return note{Seq: f.Seq, Value: e.V, At: w.hist.Clock.Now()}, true
}

// streamWriter PUTs new values of resource on random nodes until the
// clients stop.
func (w *workers) streamWriter(rng interface{ IntN(int) int }, resource string) {
	proc := w.hist.NewClient()
	for !w.stopped() {
		op := w.door.put(context.Background(), proc, rng.IntN(w.env.Nodes()), ModelStream, resource, w.values.Add(1))
		if op.Outcome == Unknown {
			proc = w.hist.NewClient()
		}
		d := 4 * w.think
		if op.Outcome != OK {
			d = 50 * time.Millisecond
		}
		select {
		case <-w.stop:
		case <-time.After(d):
		}
	}
}

// chain is a subscriber's notifications that must have no gap: the
// segments from one subscription without since (or one whose recovery
// failed) through every resubscription that said "recovered": true.
type chain struct {
	sub   int
	start int64 // when the first segment's reply came
	notes []note
	nodes []int
}

// chains splits a subscriber's segments into chains.
func (s *subscriber) chains() []chain {
	var out []chain
	for _, seg := range s.Segments {
		if len(out) == 0 || !(seg.Since > 0 && seg.Recovered) || seg.Epoch != s.Segments[0].Epoch {
			out = append(out, chain{sub: s.ID, start: seg.Start})
		}
		c := &out[len(out)-1]
		c.notes = append(c.notes, seg.Notes...)
		c.nodes = append(c.nodes, seg.Node)
	}
	return out
}

// checkStream checks the subscribers of one resource against each other
// and against the writes acknowledged (ops of the stream model):
//   - each subscriber's seqs only grow (never an older state after a
//     newer one), across resubscriptions;
//   - a seq carries the same value for everyone;
//   - a chain misses no seq that another subscriber saw between its first
//     and its last;
//   - a chain that began before a write was invoked and saw the final
//     write saw that write, when it was acknowledged.
//
// final is the value of the final write every subscriber was waited for
// (0: none).
func checkStream(resource string, subs []*subscriber, ops []Op, final int64) []Violation {
	var vs []Violation
	bad := func(format string, args ...any) {
		if len(vs) < 20 {
			vs = append(vs, Violation{Model: ModelStream, Key: resource, Detail: fmt.Sprintf(format, args...)})
		}
	}
	values := map[int64]int64{} // seq -> value
	for _, s := range subs {
		var last int64
		for _, seg := range s.Segments {
			for _, n := range seg.Notes {
				if n.Seq <= last {
					bad("subscriber %d on node %d: seq %d after seq %d (at %.3f ms)", s.ID, seg.Node, n.Seq, last, ms(n.At))
				}
				last = max(last, n.Seq)
				if v, ok := values[n.Seq]; ok && v != n.Value {
					bad("seq %d is value %d for subscriber %d on node %d, %d for another", n.Seq, n.Value, s.ID, seg.Node, v)
				}
				values[n.Seq] = n.Value
			}
		}
	}
	all := make([]int64, 0, len(values))
	for seq := range values {
		all = append(all, seq)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for _, s := range subs {
		for _, c := range s.chains() {
			if len(c.notes) == 0 {
				continue
			}
			seen := map[int64]bool{}
			for _, n := range c.notes {
				seen[n.Seq] = true
			}
			first, lastSeq := c.notes[0].Seq, c.notes[len(c.notes)-1].Seq
			i := sort.Search(len(all), func(i int) bool { return all[i] >= first })
			for ; i < len(all) && all[i] <= lastSeq; i++ {
				if !seen[all[i]] {
					bad("subscriber %d (nodes %v): seq %d (value %d) missing between %d and %d", s.ID, c.nodes, all[i], values[all[i]], first, lastSeq)
					break
				}
			}
			if final == 0 || !seen[seqOf(values, final)] {
				continue
			}
			got := map[int64]bool{}
			for _, n := range c.notes {
				got[n.Value] = true
			}
			for _, op := range ops {
				if op.Model == ModelStream && op.Key == resource && op.Outcome == OK && op.Call > c.start && !got[op.Input] {
					bad("subscriber %d (nodes %v), following since %.3f ms, never saw the acknowledged write of %d (invoked %.3f ms)", s.ID, c.nodes, ms(c.start), op.Input, ms(op.Call))
					break
				}
			}
		}
	}
	return vs
}

// seqOf returns the seq of value v, or -1.
func seqOf(values map[int64]int64, v int64) int64 {
	for seq, x := range values {
		if x == v {
			return seq
		}
	}
	return -1
}

// ms converts a clock reading to milliseconds.
func ms(t int64) float64 { return float64(t) / 1e6 }

// sabotageStream makes one subscriber miss a seq that another one saw,
// and another one read two notifications in the wrong order. It returns
// what it did, or a note saying it found no place.
func sabotageStream(subs []*subscriber) []string {
	var did []string
	dropped := -1
	seenBy := map[int64]int{}
	for _, s := range subs {
		for _, seg := range s.Segments {
			for _, n := range seg.Notes {
				seenBy[n.Seq]++
			}
		}
	}
	for si, s := range subs {
		for gi := range s.Segments {
			ns := s.Segments[gi].Notes
			for k := 1; k+1 < len(ns); k++ {
				if seenBy[ns[k].Seq] > 1 {
					did = append(did, fmt.Sprintf("subscriber %d no longer saw seq %d", s.ID, ns[k].Seq))
					s.Segments[gi].Notes = append(ns[:k:k], ns[k+1:]...)
					dropped = si
					break
				}
			}
			if dropped >= 0 {
				break
			}
		}
		if dropped >= 0 {
			break
		}
	}
	for si, s := range subs {
		if si == dropped {
			continue
		}
		for gi := range s.Segments {
			if ns := s.Segments[gi].Notes; len(ns) >= 2 {
				ns[0], ns[1] = ns[1], ns[0]
				did = append(did, fmt.Sprintf("subscriber %d read seq %d before seq %d", s.ID, ns[0].Seq, ns[1].Seq))
				return did
			}
		}
	}
	return append(did, "sabotage: no place for a reordering in the stream")
}

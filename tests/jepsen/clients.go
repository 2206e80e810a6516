package jepsen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// workers holds what the clients of one run share.
type workers struct {
	env     Env
	hist    *History
	door    *httpDoor
	timeout time.Duration
	think   time.Duration
	stop    chan struct{} // closed when the clients must stop
	values  atomic.Int64  // the last value written: each write takes the next
}

// stopped reports whether the clients must stop.
func (w *workers) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// pause waits up to the think time (random), or until the clients stop.
func (w *workers) pause(rng *rand.Rand, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-w.stop:
	case <-time.After(time.Duration(rng.Int64N(int64(d)) + 1)):
	}
}

// registerClient runs one register client until the clients stop: each
// operation on a random node and key, 40% GET, 40% PUT of a value never
// written before, 20% DELETE. After an unknown outcome it goes on as a
// new process, as Jepsen's clients do, and sends that node only GETs
// until one is answered: a write of unknown outcome stays open until the
// end of the history for porcupine, and a client that kept writing to a
// node killed behind its gate (which resets every connection) left
// thousands of them, more than porcupine decides in minutes.
func (w *workers) registerClient(rng *rand.Rand, keys []string) {
	ctx := context.Background()
	proc := w.hist.NewClient()
	suspect := make([]bool, w.env.Nodes())
	for !w.stopped() {
		node, key := rng.IntN(w.env.Nodes()), keys[rng.IntN(len(keys))]
		var op Op
		switch r := rng.IntN(10); {
		case r < 4 || suspect[node]:
			op = w.door.get(ctx, proc, node, ModelRegister, key, "v")
			if op.Outcome == OK {
				suspect[node] = false
			}
		case r < 8:
			op = w.door.put(ctx, proc, node, ModelRegister, key, w.values.Add(1))
		default:
			op = w.door.del(ctx, proc, node, ModelRegister, key)
		}
		if op.Outcome == Unknown {
			proc = w.hist.NewClient()
			suspect[node] = true
		}
		d := w.think
		if op.Outcome != OK {
			d = 50 * time.Millisecond // a node down or cut off: do not spin on it
		}
		w.pause(rng, d)
	}
}

// createRounds runs rounds of create-if-absent on the children of parent
// until the clients stop: in each round, racers on different nodes POST
// the same new id over the WebSocket door at once while readers GET the
// child over HTTP; then a late POST and a GET on other nodes.
func (w *workers) createRounds(rng *rand.Rand, parent string, racers int) {
	conns := make([]*wsConn, w.env.Nodes()*racers) // a connection per node and racer, kept across rounds
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.close()
			}
		}
	}()
	ctx := context.Background()
	for round := 1; !w.stopped(); round++ {
		child := fmt.Sprintf("%s/i%d", parent, round)
		id := fmt.Sprintf("i%d", round)
		nodes := rng.Perm(w.env.Nodes())
		var wg sync.WaitGroup
		for r := range racers {
			node := nodes[r%len(nodes)]
			slot := node*racers + r
			wg.Go(func() {
				conns[slot] = w.post(conns[slot], node, parent, id, child)
			})
		}
		for range 2 {
			rrng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
			wg.Go(func() {
				proc := w.hist.NewClient()
				for range 2 {
					time.Sleep(time.Duration(rrng.IntN(5000)) * time.Microsecond)
					w.door.get(ctx, proc, rrng.IntN(w.env.Nodes()), ModelCreate, child, "c")
				}
			})
		}
		wg.Wait()
		late := rng.IntN(w.env.Nodes())
		slot := late*racers + racers - 1
		conns[slot] = w.post(conns[slot], late, parent, id, child)
		w.door.get(ctx, w.hist.NewClient(), rng.IntN(w.env.Nodes()), ModelCreate, child, "c")
		w.pause(rng, w.think)
	}
}

// post sends one POST of child id under parent on node over c (a new
// connection when c is nil), records it, and returns the connection to
// use next (nil after a failure).
func (w *workers) post(c *wsConn, node int, parent, id, child string) *wsConn {
	mark := w.values.Add(1)
	op := Op{Model: ModelCreate, Client: w.hist.NewClient(), Node: node, Kind: "post", Key: child, Input: mark}
	op.Call = w.hist.Clock.Now()
	if c == nil {
		var err error
		c, err = dialWS(context.Background(), w.env, node, w.timeout)
		if err != nil {
			op.Return, op.Outcome, op.Answer = w.hist.Clock.Now(), Fail, err.Error()
			w.hist.Add(op)
			return nil
		}
	}
	f, err := c.call(map[string]any{
		"method": "POST", "resource": parent, "id": id,
		"entity": map[string]int64{"c": mark}, "persistent": true,
	}, w.timeout, nil)
	op.Return = w.hist.Clock.Now()
	switch {
	case err != nil:
		op.Outcome, op.Answer = Unknown, err.Error()
	case f.Code == "success" && f.ID == id:
		op.Outcome, op.Output, op.Answer = OK, OutCreated, "success"
	case f.Code == "failed" && f.Reason == "exists":
		op.Outcome, op.Output, op.Answer = OK, OutExists, "failed: exists"
	case f.Code == "failed" && (f.Reason == "unavailable" || f.Reason == "disconnected" || f.Reason == "closed"):
		op.Outcome, op.Answer = Unknown, "failed: "+f.Reason
	default:
		op.Outcome, op.Answer = Unknown, fmt.Sprintf("%s: %s (id %q)", f.Code, f.Reason, f.ID)
		w.hist.Problem(fmt.Sprintf("POST %s id %s on node %d: unexpected reply %s", parent, id, node, op.Answer))
	}
	w.hist.Add(op)
	if err != nil {
		c.close()
		return nil
	}
	return c
}

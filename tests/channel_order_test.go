package tests

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// TestChannelOrder: two clients write one resource at the same time; a
// subscriber receives every change once, in the order the changes were
// applied (increasing seq, each writer's changes in the order it sent
// them), and the last notification holds the state a GET then reads.
func TestChannelOrder(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		sub := g.dial("$S")
		writers := []*wsClient{g.dial("$A"), g.dial("$B")}
		p := jsonString("/" + uniq("order-"))
		sub.call(`{"method":"SUBSCRIBE","resource":` + p + `,"msg_id":1}`)

		const n = 200
		errs := make([]error, len(writers))
		var wg sync.WaitGroup
		for w, c := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
				defer cancel()
				for i := range n {
					msg := `{"method":"PUT","resource":` + p + `,"entity":{"w":` + strconv.Itoa(w) + `,"i":` + strconv.Itoa(i) + `}}`
					if err := c.conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
						errs[w] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for w, err := range errs {
			if err != nil {
				t.Fatalf("writer %d: %v", w, err)
			}
		}

		next := make([]int, len(writers)) // the i each writer's next change must have
		var seqs []uint64
		var last string
		for range len(writers) * n {
			f := sub.next()
			var note struct {
				Notify string
				Entity struct{ W, I int }
				Seq    uint64
			}
			if err := json.Unmarshal([]byte(f), &note); err != nil || note.Notify != "PUT" || note.Entity.W < 0 || note.Entity.W >= len(writers) {
				t.Fatalf("not one of the PUTs: %s", f)
			}
			if note.Entity.I != next[note.Entity.W] {
				t.Fatalf("writer %d: change %d came when %d was due", note.Entity.W, note.Entity.I, next[note.Entity.W])
			}
			next[note.Entity.W]++
			seqs = append(seqs, note.Seq)
			last = field(f, "entity")
		}
		increasing(t, seqs)
		want := `{"msg_id":2,"code":"success","resource":` + p + `,"type":"application/json","entity":` + last + `}`
		if got := sub.call(`{"method":"GET","resource":` + p + `,"msg_id":2}`); got != want {
			t.Errorf("the state after the changes\n got %s\nwant %s", got, want)
		}
		sub.quiet()
	})
}

package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// TestOffer: a waiting invitation (NOTIFY with "offer": true) is decided
// fleet-wide before it takes a seq, as on one node: one that no node
// would deliver fails with no subscriber and leaves no trace, however
// often it is retried; one that a subscriber of another node receives
// is delivered once, takes one seq and enters the history once.
func TestOffer(t *testing.T) {
	cl := natstest.Start(t, 3)
	ns := fleet(t, cl, 3, Config{})
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range ns {
		for len(n.f.Live()) < 3 {
			if time.Now().After(deadline) {
				t.Fatalf("node %s sees %d live nodes, want 3", n.f.Node(), len(n.f.Live()))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// A watcher on every node: the seq of each mark there is the tree's.
	var watchers []*client
	for _, n := range ns {
		watchers = append(watchers, subscriber(t, n, "/w"))
	}
	writer := connect(t, ns[1], "")
	marks := 0
	mark := func() []uint64 {
		t.Helper()
		marks++
		if r := writer.do(fmt.Sprintf(`{"method":"PUT","resource":"/w/m%d","entity":1,"persistent":true}`, marks)); code(r) != "success" {
			t.Fatal(r)
		}
		var seqs []uint64
		for _, w := range watchers {
			w.expect(marks)
			s := w.seqs()
			seqs = append(seqs, s[len(s)-1])
		}
		return seqs
	}
	before := mark()

	const offer = `{"method":"NOTIFY","resource":"/bell","data":%d,"offer":true}`
	for i, n := range ns {
		for j := range 3 { // retried, as plugins/call retries a waiting invitation
			c := connect(t, n, "")
			if r := c.do(fmt.Sprintf(offer, 10*i+j)); code(r) != "failed: no subscriber" {
				t.Fatalf("offer on node %d with no subscriber: %v", i, r)
			}
			if r := call(t, n, fmt.Sprintf(offer, 10*i+j)); !strings.Contains(r, `"reason":"no subscriber"`) {
				t.Fatalf("offer by Call on node %d with no subscriber: %s", i, r)
			}
		}
	}
	after := mark()
	for i := range ns {
		if after[i] != before[i]+1 || after[i] != after[0] {
			t.Fatalf("seqs of the marks before and after the offers nobody receives: %v, %v; want one apart on every node", before, after)
		}
	}

	// A subscriber on node 2 only; the offer comes from node 0.
	sub := subscriber(t, ns[2], "/bell")
	sender := connect(t, ns[0], "")
	if r := sender.do(fmt.Sprintf(offer, 7)); r["sent_count"] != float64(1) {
		t.Fatalf("offer to a subscriber of another node: %v", r)
	}
	sub.expect(1)
	if got := sub.notes[0]; got["data"] != float64(7) || got["seq"] != float64(after[0]+1) {
		t.Fatalf("notification of the offer: %v, want data 7 and seq %d", got, after[0]+1)
	}
	if last := mark(); last[0] != after[0]+2 || last[1] != last[0] || last[2] != last[0] {
		t.Fatalf("seqs of the marks around the delivered offer: %v, %v; want two apart on every node", after, last)
	}

	// Its history, replayed on node 1: the offer once, then the end mark.
	late := connect(t, ns[1], "")
	if r := late.do(fmt.Sprintf(`{"method":"SUBSCRIBE","resource":"/bell","since":%d}`, after[0])); code(r) != "success" {
		t.Fatal(r)
	}
	if r := sender.do(`{"method":"NOTIFY","resource":"/bell","data":"end"}`); code(r) != "success" {
		t.Fatal(r)
	}
	var offers int
	for i := 0; ; i++ {
		late.expect(i + 1)
		d := late.notes[i]["data"]
		if d == "end" {
			break
		}
		if d != float64(7) {
			t.Fatalf("replayed %v: only the offer delivered before is in the history", late.notes[i])
		}
		offers++
	}
	if offers != 1 {
		t.Fatalf("the offer is %d times in the history, want once", offers)
	}
}

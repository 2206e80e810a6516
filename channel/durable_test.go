package channel

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reso-project/reso/internal/poll"
)

// until waits for cond, checked under the tree's lock, failing the test
// after a generous while: it waits for a state, it times nothing.
func until(t *testing.T, tr *Tree, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 2*time.Minute, what, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return cond()
	})
}

// TestFailedStoreInvisible: a change whose Save fails is seen by nobody
// (reads, listings, subscribers, the history) and leaves no trace after
// a restart; seq goes on as if it had never come.
func TestFailedStoreInvisible(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{})
	a := connect(t, tr, "a", "")
	b := connect(t, tr, "b", "")
	s := connect(t, tr, "s", "")
	admin := connect(t, tr, "admin", Admin)
	must(t, a, `{"method":"PUT","resource":"/r","entity":{"v":"before"},"persistent":true,"msg_id":0}`)
	must(t, a, `{"method":"PUT","resource":"/l/k","entity":1,"persistent":true,"msg_id":0}`)
	must(t, s, `{"method":"SUBSCRIBE","resource":"/r","msg_id":0}`)
	must(t, s, `{"method":"SUBSCRIBE","resource":"/l","msg_id":0}`)
	last := tr.seq

	st.setFail(true)
	for _, m := range []struct {
		c   *Client
		msg string
	}{
		{a, `{"method":"PUT","resource":"/r","entity":{"v":"during"},"persistent":true,"msg_id":1}`},
		{a, `{"method":"PUT","resource":"/r","entity":{"w":1},"partial":true,"persistent":true,"msg_id":1}`},
		{a, `{"method":"PUT","resource":"/r","entity":{"v":"mine"},"msg_id":1}`}, // persistent -> transient
		{a, `{"method":"DELETE","resource":"/r","msg_id":1}`},
		{a, `{"method":"POST","resource":"/l","id":"x","persistent":true,"msg_id":1}`},
		{a, `{"method":"DELETE","resource":"/l/k","msg_id":1}`},
		{a, `{"method":"PUT","resource":"/new/deep","persistent":true,"msg_id":1}`},
		{admin, `{"method":"RULES","resource":"/r","rules":"anon:-","msg_id":1}`},
	} {
		if got := ex(t, m.c, m.msg); got != `{"msg_id":1,"code":"failed","reason":"store failed"}` {
			t.Errorf("%s: %s", m.msg, got)
		}
	}
	if got := tr.Call(context.Background(), "", "", []byte(`{"method":"PUT","resource":"/r","entity":2,"msg_id":1}`)); string(got) != `{"msg_id":1,"code":"failed","reason":"store failed"}` {
		t.Errorf("Call: %s", got)
	}
	for _, c := range []struct{ msg, want string }{
		{`{"method":"GET","resource":"/r","msg_id":2}`, `{"msg_id":2,"code":"success","resource":"/r","type":"application/json","entity":{"v":"before"}}`},
		{`{"method":"GET","resource":"/l?deep=1","msg_id":2}`, `{"msg_id":2,"code":"success","resource":"/l?deep=1","type":"application/json","entity":["k"]}`},
		{`{"method":"GET","resource":"/","msg_id":2}`, `{"msg_id":2,"code":"success","resource":"/","type":"application/json","entity":["r","l"]}`},
		{`{"method":"SUBSCRIBE","resource":"/r","since":` + fmt.Sprint(last) + `,"msg_id":2}`, `{"msg_id":2,"code":"success","recovered":true,"epoch":"e"}`},
		{`{"method":"SUBSCRIBE","resource":"/l","since":` + fmt.Sprint(last) + `,"msg_id":2}`, `{"msg_id":2,"code":"success","recovered":true,"epoch":"e"}`},
	} {
		if got := ex(t, b, c.msg); got != c.want {
			t.Errorf("%s: %s, want %s", c.msg, got, c.want)
		}
	}
	if got := ex(t, admin, `{"method":"RULES","resource":"/r","msg_id":2}`); !strings.Contains(got, `"rules":""`) {
		t.Errorf("rules after a failed change: %s", got)
	}
	if got := drain(t, s); len(got) != 0 {
		t.Errorf("a subscriber got %q", got)
	}

	st.setFail(false)
	must(t, a, `{"method":"PUT","resource":"/r","entity":{"v":"after"},"persistent":true,"msg_id":0}`)
	got := drain(t, s)
	want := fmt.Sprintf(`{"notify":"PUT","resource":"/r","type":"application/json","entity":{"v":"after"},"from":"a","seq":%d}`, last+1)
	if len(got) != 1 || got[0] != want {
		t.Errorf("after the store came back: %q, want %s", got, want)
	}

	// A restart on what the store holds.
	tr2 := newTree(t, st.snapshot(), Options{})
	c := connect(t, tr2, "c", "")
	if got := ex(t, c, `{"method":"GET","resource":"/?deep=2","msg_id":3}`); got != `{"msg_id":3,"code":"success","resource":"/?deep=2","type":"application/json","entity":[{"rid":"r","type":"application/json","entity":{"v":"after"}},{"rid":"l","type":"application/json","entity":["k"]}]}` {
		t.Errorf("after a restart: %s", got)
	}
}

// TestChangeOrder: while a batch is being saved, a persistent PUT waits
// in the next one unseen; a second PUT of the same path waits for it and
// then merges into it; subscribers get both in order, each reply after
// its notification.
func TestChangeOrder(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{})
	a, b, r, s := connect(t, tr, "a", ""), connect(t, tr, "b", ""), connect(t, tr, "r", ""), connect(t, tr, "s", "")
	must(t, s, `{"method":"SUBSCRIBE","resource":"/x","msg_id":0}`)
	must(t, s, `{"method":"SUBSCRIBE","resource":"/","msg_id":0}`)
	must(t, a, `{"method":"SUBSCRIBE","resource":"/x","msg_id":0}`)
	g := connect(t, tr, "g", "")
	entered, release := st.hold()
	var wg sync.WaitGroup
	exec := func(c *Client, msg string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Exec(context.Background(), []byte(msg))
		}()
	}
	exec(g, `{"method":"PUT","resource":"/g","persistent":true}`)
	<-entered // the first batch is being saved
	exec(a, `{"method":"PUT","resource":"/x","entity":{"n":1},"persistent":true,"msg_id":1}`)
	until(t, tr, "the PUT waits in the next batch", func() bool { return tr.pend != nil && len(tr.pend.changes) == 1 })
	exec(b, `{"method":"PUT","resource":"/x","entity":{"m":2},"partial":true,"persistent":true,"msg_id":2}`)
	until(t, tr, "the second PUT waits", func() bool { return tr.counts.waits.Load() > 0 })
	for _, c := range []struct{ msg, want string }{
		{`{"method":"GET","resource":"/x","msg_id":3}`, `{"msg_id":3,"code":"failed","reason":"not found"}`},
		{`{"method":"GET","resource":"/","msg_id":3}`, `{"msg_id":3,"code":"success","resource":"/","type":"application/json","entity":[]}`},
	} {
		if got := ex(t, r, c.msg); got != c.want {
			t.Errorf("while stored: %s: %s, want %s", c.msg, got, c.want)
		}
	}
	if got := drain(t, s); len(got) != 0 {
		t.Errorf("notified before stored: %q", got)
	}
	release()
	wg.Wait()
	if got := ex(t, r, `{"method":"GET","resource":"/x","msg_id":4}`); got != `{"msg_id":4,"code":"success","resource":"/x","type":"application/json","entity":{"n":1,"m":2}}` {
		t.Errorf("after: %s", got)
	}
	var seqs []uint64
	var kinds []string
	for _, f := range drain(t, s) {
		seqs = append(seqs, seqOf(f))
		kinds = append(kinds, f[:strings.Index(f, `"type"`)])
	}
	want := []string{
		`{"notify":"UPDATE","resource":"/","update":"g",`,
		`{"notify":"PUT","resource":"/x",`, `{"notify":"UPDATE","resource":"/","update":"x",`,
		`{"notify":"PUT","resource":"/x",`, `{"notify":"UPDATE","resource":"/","update":"x",`,
	}
	if strings.Join(kinds, "\n") != strings.Join(want, "\n") {
		t.Fatalf("notifications:\n%s\nwant\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
	if seqs[0] >= seqs[1] || seqs[1] != seqs[2] || seqs[2] >= seqs[3] || seqs[3] != seqs[4] {
		t.Errorf("seqs %v", seqs)
	}
	// a's reply comes after the notification of its change.
	got := drain(t, a)
	if len(got) < 2 || !strings.HasPrefix(got[0], `{"notify":"PUT","resource":"/x","type":"application/json","entity":{"n":1},`) || !strings.Contains(strings.Join(got[1:], "\n"), `{"msg_id":1,"code":"success"}`) {
		t.Errorf("a's frames: %q", got)
	}
}

// TestSiblingsShareBatch: persistent creations of siblings proposed while
// a batch is being saved wait in one next batch, not one batch each.
func TestSiblingsShareBatch(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{})
	must(t, connect(t, tr, "p", ""), `{"method":"PUT","resource":"/s","persistent":true,"msg_id":0}`)
	entered, release := st.hold()
	var wg sync.WaitGroup
	const n = 10
	for i := range n + 1 {
		c := connect(t, tr, fmt.Sprint("c", i), "")
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Exec(context.Background(), fmt.Appendf(nil, `{"method":"PUT","resource":"/s/%d","persistent":true}`, i))
		}()
		if i == 0 {
			<-entered
		}
	}
	until(t, tr, "the siblings gather in one batch", func() bool { return tr.pend != nil && len(tr.pend.changes) == n })
	st.mu.Lock()
	saves := st.saves
	st.mu.Unlock()
	release()
	wg.Wait()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.saves != saves+2 {
		t.Errorf("%d saves for 2 batches", st.saves-saves)
	}
	if len(st.recs) != n+2 {
		t.Errorf("%d records, want %d", len(st.recs), n+2)
	}
}

// TestSeqMarkStalled: with the store failing, seqs stop at the mark the
// store keeps, so that after a crash no seq seen before is handed out
// again to a client resuming with since.
func TestSeqMarkStalled(t *testing.T) {
	st := newMemStore()
	opt := Options{QueueFrames: 2 * seqBlock, QueueBytes: 64 << 20}
	tr, err := New(context.Background(), st, opt)
	if err != nil {
		t.Fatal(err)
	}
	s := connect(t, tr, "s", "")
	must(t, s, `{"method":"SUBSCRIBE","resource":"/t","msg_id":0}`)
	st.setFail(true)
	n := connect(t, tr, "n", "")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range seqBlock + 100 {
			n.Exec(context.Background(), fmt.Appendf(nil, `{"method":"NOTIFY","resource":"/t","data":%d}`, i))
		}
	}()
	until(t, tr, "seq reaches the mark", func() bool { return tr.seq == tr.saved && tr.counts.waits.Load() > 0 })
	crashed := st.snapshot()
	var last uint64
	for _, f := range drain(t, s) {
		last = max(last, seqOf(f))
	}
	if last == 0 || last > crashed.lastSeq {
		t.Fatalf("seq %d handed out, the store's mark %d", last, crashed.lastSeq)
	}
	tr.Close() // the NOTIFY waiting for a mark gives up
	<-done

	tr2 := newTree(t, crashed, opt)
	c := connect(t, tr2, "c", "")
	// Nothing after last was handed out: the history since then is whole.
	got := ex(t, c, fmt.Sprintf(`{"method":"SUBSCRIBE","resource":"/t","since":%d,"msg_id":1}`, last))
	if got != `{"msg_id":1,"code":"success","recovered":true,"epoch":"e"}` {
		t.Errorf("since %d after the crash: %s", last, got)
	}
	c.Exec(context.Background(), []byte(`{"method":"NOTIFY","resource":"/t","data":0}`))
	if got := drain(t, c); len(got) != 1 || seqOf(got[0]) <= last {
		t.Errorf("after the crash: %q, seen %d before", got, last)
	}
}

// TestEndAfterStoredChange: a client that ends while its change waits to
// be stored does not keep what the change gives it: a persistent
// resource it made its own is removed once the change is applied.
func TestEndAfterStoredChange(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{})
	a, r := connect(t, tr, "a", ""), connect(t, tr, "r", "")
	must(t, a, `{"method":"PUT","resource":"/x","entity":1,"persistent":true,"msg_id":0}`)
	entered, release := st.hold()
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Exec(context.Background(), []byte(`{"method":"PUT","resource":"/x","entity":2,"msg_id":1}`))
	}()
	<-entered
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		a.Disconnect()
	}()
	until(t, tr, "the client is ended", func() bool { return a.ended })
	release()
	<-done
	<-ended
	if got := ex(t, r, `{"method":"GET","resource":"/x","msg_id":2}`); got != `{"msg_id":2,"code":"failed","reason":"not found"}` {
		t.Errorf("after the end: %s", got)
	}
}

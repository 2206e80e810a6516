package channel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// execAll runs msgs as c on a goroutine of its own and returns a channel
// closed once every Exec returned.
func execAll(c *Client, msgs ...string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, m := range msgs {
			c.Exec(context.Background(), []byte(m))
		}
	}()
	return done
}

// await waits for ch to be closed, failing the test after a generous
// while: it waits for a state, it times nothing.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("never: %s", what)
	}
}

// mustReply runs msg as c and waits for its reply, skipping the
// notifications before it, failing the test unless it succeeded.
func mustReply(t *testing.T, c *Client, msg string) {
	t.Helper()
	c.Exec(context.Background(), []byte(msg))
	for {
		for _, f := range nextN(t, c, 1) {
			if strings.HasPrefix(f, `{"msg_id":`) {
				if !strings.Contains(f, `"code":"success"`) {
					t.Fatalf("%s: %s", msg, f)
				}
				return
			}
		}
	}
}

// holdStore holds the Saves of st until release, which a failed test
// calls too, so that its tree can close.
func holdStore(t *testing.T, st *memStore) (entered <-chan struct{}, release func()) {
	entered, rel := st.hold()
	release = sync.OnceFunc(rel)
	t.Cleanup(release)
	return entered, release
}

// nextN returns the next n frames queued for c, waiting for them.
func nextN(t *testing.T, c *Client, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []string
	for len(out) < n {
		fs, err := c.Next(ctx, nil)
		if err != nil {
			t.Fatalf("waiting for %d frames, got %q: %v", n, out, err)
		}
		for _, f := range fs {
			out = append(out, string(f.Data))
		}
	}
	return out
}

// TestPipeline checks Options.Pipeline: a connection's persistent changes
// do not wait for the store (its Execs return while a Save is held, and
// they join one batch), a message that is no such change waits for them,
// and the replies come in the order of the messages, each after the
// notifications of its change.
func TestPipeline(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{Pipeline: true})
	c := connect(t, tr, "c", "")
	mustReply(t, c, `{"method":"SUBSCRIBE","resource":"/p","msg_id":0}`)
	mustReply(t, c, `{"method":"PUT","resource":"/p/first","persistent":true,"msg_id":0}`)
	mustReply(t, c, `{"method":"PUT","resource":"/q/x","persistent":true,"msg_id":0}`)

	entered, release := holdStore(t, st)
	await(t, execAll(c, `{"method":"PUT","resource":"/p/held","persistent":true,"msg_id":1}`), "a first Exec while the store is free")
	<-entered // the batch of /p/held is being saved, and held
	await(t, execAll(c,
		`{"method":"PUT","resource":"/p/a","entity":{"n":1},"persistent":true,"msg_id":2}`,
		`{"method":"POST","resource":"/p","id":"b","persistent":true,"msg_id":3}`,
		`{"method":"DELETE","resource":"/q/x","msg_id":4}`,
	), "the Execs of persistent changes while a Save is held")
	if got := drain(t, c); len(got) != 0 {
		t.Fatalf("frames before the save: %q", got)
	}
	// A failure, a read and a transient change wait for the changes
	// before them.
	rest := execAll(c,
		`{"method":"PUT","resource":"/p/bad","entity":1,"partial":true,"msg_id":5}`,
		`{"method":"PUT","resource":"/p/bad","entity":{,"msg_id":5}`,
		`{"method":"GET","resource":"/p","msg_id":6}`,
		`{"method":"PUT","resource":"/p/t","msg_id":7}`,
	)
	release()
	await(t, rest, "the Execs after the held Save")
	want := []string{
		`{"notify":"UPDATE","resource":"/p","update":"held","type":"application/json","entity":{},"seq":3}`,
		`{"msg_id":1,"code":"success"}`,
		`{"notify":"UPDATE","resource":"/p","update":"a","type":"application/json","entity":{"n":1},"seq":4}`,
		`{"notify":"UPDATE","resource":"/p","create":"b","type":"application/json","entity":{},"seq":5}`,
		`{"msg_id":2,"code":"success"}`,
		`{"msg_id":3,"code":"success","id":"b"}`,
		`{"msg_id":4,"code":"success"}`,
		`{"msg_id":5,"code":"failed","reason":"invalid entity"}`,
		`{"code":"failed","reason":"invalid JSON"}`,
		`{"msg_id":6,"code":"success","resource":"/p","type":"application/json","entity":["first","held","a","b"]}`,
		`{"notify":"UPDATE","resource":"/p","update":"t","type":"application/json","entity":{},"seq":7}`,
		`{"msg_id":7,"code":"success"}`,
	}
	if got := nextN(t, c, len(want)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	st.mu.Lock()
	saves := st.saves
	st.mu.Unlock()
	if saves != 5 { // /p/first, /q/x, /p/held, then a, b and the delete of /q/x together
		t.Errorf("%d saves, want 5", saves)
	}
}

// TestPipelineStoreFailed checks that the pipelined changes of a failed
// batch answer "store failed" in order, leave nothing behind, and that
// the connection goes on.
func TestPipelineStoreFailed(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{Pipeline: true})
	c := connect(t, tr, "c", "")
	mustReply(t, c, `{"method":"PUT","resource":"/f","persistent":true,"msg_id":0}`)
	st.setFail(true)
	entered, release := holdStore(t, st)
	await(t, execAll(c, `{"method":"PUT","resource":"/f/1","persistent":true,"msg_id":1}`), "a first Exec")
	<-entered
	await(t, execAll(c,
		`{"method":"PUT","resource":"/f/2","persistent":true,"msg_id":2}`,
		`{"method":"PUT","resource":"/f/3","persistent":true,"msg_id":3}`,
	), "the Execs while a failing Save is held")
	release()
	get := execAll(c, `{"method":"GET","resource":"/f","msg_id":4}`)
	await(t, get, "a GET after the failed batches")
	want := []string{
		`{"msg_id":1,"code":"failed","reason":"store failed"}`,
		`{"msg_id":2,"code":"failed","reason":"store failed"}`,
		`{"msg_id":3,"code":"failed","reason":"store failed"}`,
		`{"msg_id":4,"code":"success","resource":"/f","type":"application/json","entity":{}}`,
	}
	if got := nextN(t, c, len(want)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	st.setFail(false)
	mustReply(t, c, `{"method":"PUT","resource":"/f/4","persistent":true,"msg_id":0}`)
}

// TestPipelineDepth checks that a connection has at most pipelineDepth
// changes under way: the next Exec waits for the store.
func TestPipelineDepth(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{Pipeline: true})
	c := connect(t, tr, "c", "")
	mustReply(t, c, `{"method":"PUT","resource":"/d","persistent":true,"msg_id":0}`)
	entered, release := holdStore(t, st)
	msgs := make([]string, pipelineDepth)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"method":"PUT","resource":"/d/%d","persistent":true,"msg_id":%d}`, i, i)
	}
	await(t, execAll(c, msgs...), "pipelineDepth Execs while a Save is held")
	<-entered
	waits := tr.counts.waits.Load()
	more := execAll(c, `{"method":"PUT","resource":"/d/more","persistent":true,"msg_id":-1}`)
	until(t, tr, "the next change waits", func() bool { return tr.counts.waits.Load() > waits })
	select {
	case <-more:
		t.Fatal("an Exec past pipelineDepth returned while the store was held")
	default:
	}
	release()
	await(t, more, "the Exec past pipelineDepth once the store is free")
	if got := nextN(t, c, pipelineDepth+1); got[len(got)-1] != `{"msg_id":-1,"code":"success"}` {
		t.Fatalf("last reply %s", got[len(got)-1])
	}
}

// TestPipelineDisconnect checks that a connection that disconnects with
// pipelined changes under way gets their replies before its end.
func TestPipelineDisconnect(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{Pipeline: true})
	c := connect(t, tr, "c", "")
	mustReply(t, c, `{"method":"PUT","resource":"/x","persistent":true,"msg_id":0}`)
	entered, release := holdStore(t, st)
	await(t, execAll(c,
		`{"method":"PUT","resource":"/x/1","persistent":true,"msg_id":1}`,
		`{"method":"PUT","resource":"/x/2","persistent":true,"msg_id":2}`,
	), "the Execs while a Save is held")
	<-entered
	waits := tr.counts.waits.Load()
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		c.Disconnect()
	}()
	until(t, tr, "the Disconnect waits for the store or ends the client", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return tr.counts.waits.Load() > waits || c.gone != nil
	})
	release()
	await(t, gone, "the Disconnect")
	want := `{"msg_id":1,"code":"success"}` + "\n" + `{"msg_id":2,"code":"success"}`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fs, err := c.Next(ctx, nil)
	var got []string
	for _, f := range fs {
		got = append(got, string(f.Data))
	}
	if strings.Join(got, "\n") != want || err != nil {
		t.Fatalf("got %q, %v; want\n%s", got, err, want)
	}
	var g *Gone
	if _, err := c.Next(ctx, nil); !errors.As(err, &g) || g.Code != 1000 {
		t.Fatalf("after the replies: %v, want the end", err)
	}
}

// TestPipelineBatchBound checks that pipelined changes fill a batch up to
// maxBatchSize; the next one waits for it.
func TestPipelineBatchBound(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{Pipeline: true})
	first := connect(t, tr, "first", "")
	mustReply(t, first, `{"method":"PUT","resource":"/b","persistent":true,"msg_id":0}`)
	entered, release := holdStore(t, st)
	await(t, execAll(first, `{"method":"PUT","resource":"/b/held","persistent":true,"msg_id":0}`), "a first Exec")
	<-entered // saving; the next batch gathers
	for i := 0; i < maxBatchSize/pipelineDepth; i++ {
		c := connect(t, tr, fmt.Sprint("c", i), "")
		msgs := make([]string, pipelineDepth)
		for j := range msgs {
			msgs[j] = fmt.Sprintf(`{"method":"PUT","resource":"/b/%d-%d","persistent":true}`, i, j)
		}
		await(t, execAll(c, msgs...), "filling the batch")
	}
	waits := tr.counts.waits.Load()
	over := connect(t, tr, "over", "")
	more := execAll(over, `{"method":"PUT","resource":"/b/over","persistent":true,"msg_id":1}`)
	until(t, tr, "the change past a full batch waits", func() bool { return tr.counts.waits.Load() > waits })
	tr.mu.Lock()
	n := len(tr.pend.changes)
	tr.mu.Unlock()
	if n != maxBatchSize {
		t.Fatalf("%d changes in the batch, want %d", n, maxBatchSize)
	}
	release()
	await(t, more, "the change past the full batch")
	mustReplyFrame(t, over, `{"msg_id":1,"code":"success"}`)
}

// mustReplyFrame waits for the next frame of c and checks it is want.
func mustReplyFrame(t *testing.T, c *Client, want string) {
	t.Helper()
	if got := nextN(t, c, 1); len(got) != 1 || got[0] != want {
		t.Fatalf("got %q, want %s", got, want)
	}
}

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

// TestSlowConsumer checks that a full queue ends only that client, with
// ErrSlowConsumer after the frames it still holds, and removes its
// transient resources; the sender and other subscribers go on.
func TestSlowConsumer(t *testing.T) {
	tr := newTree(t, nil, Options{QueueFrames: 4})
	slow := connect(t, tr, "slow", "")
	fast := connect(t, tr, "fast", "")
	ctx := context.Background()
	slow.Exec(ctx, []byte(`{"method":"PUT","resource":"/mine/x"}`))
	slow.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/n"}`))
	fast.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/mine"}`))
	for i := 0; i < 10; i++ {
		fast.Exec(ctx, []byte(`{"method":"NOTIFY","resource":"/n","data":1}`))
	}
	fs, err := slow.Next(ctx, nil)
	if err != nil || len(fs) != 4 {
		t.Fatalf("first Next: %d frames, %v", len(fs), err)
	}
	if _, err := slow.Next(ctx, nil); err != ErrSlowConsumer {
		t.Fatalf("then: %v, want ErrSlowConsumer", err)
	}
	// The cleanup runs apart: wait for the DELETE of the transient resource.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	fs, err = fast.Next(wctx, nil)
	if err != nil || len(fs) != 1 || !strings.Contains(string(fs[0].Data), `"delete":"x"`) {
		t.Fatalf("fast got %d frames, %v", len(fs), err)
	}
	fast.Exec(ctx, []byte(`{"method":"NOTIFY","resource":"/n","msg_id":1}`))
	if got := drain(t, fast); len(got) != 1 || got[0] != `{"msg_id":1,"code":"failed","reason":"no subscriber"}` {
		t.Fatalf("after: %q", got)
	}
}

// TestQueueBytes checks the byte bound of a queue.
func TestQueueBytes(t *testing.T) {
	tr := newTree(t, nil, Options{QueueBytes: 200})
	c := connect(t, tr, "c", "")
	ctx := context.Background()
	c.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/n"}`))
	big := `{"method":"NOTIFY","resource":"/n","data":"` + strings.Repeat("x", 120) + `"}`
	c.Exec(ctx, []byte(big)) // alone in the queue: taken
	c.Exec(ctx, []byte(big)) // over 200 bytes: the end
	fs, err := c.Next(ctx, nil)
	if err != nil || len(fs) != 1 {
		t.Fatalf("%d frames, %v", len(fs), err)
	}
	if _, err := c.Next(ctx, nil); err != ErrSlowConsumer {
		t.Fatalf("got %v", err)
	}
}

// TestDisconnectOnce checks that ending a client many times at once
// deletes its resources once, and that Next reports the end.
func TestDisconnectOnce(t *testing.T) {
	tr := newTree(t, nil, Options{})
	ctx := context.Background()
	watcher := connect(t, tr, "w", "")
	watcher.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/p"}`))
	c := connect(t, tr, "c", "")
	c.Exec(ctx, []byte(`{"method":"PUT","resource":"/p/a"}`))
	c.Exec(ctx, []byte(`{"method":"PUT","resource":"/p/b"}`))
	drain(t, watcher)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(2)
		go func() { defer wg.Done(); c.Disconnect() }()
		go func() { defer wg.Done(); tr.Disconnect("c") }()
	}
	wg.Wait()
	if got := drain(t, watcher); len(got) != 2 {
		t.Fatalf("watcher got %q, want two deletes", got)
	}
	_, err := c.Next(ctx, nil)
	var g *Gone
	if !errors.As(err, &g) || g.Code != 1000 || g.Reason != "disconnected" {
		t.Fatalf("Next after Disconnect: %v", err)
	}
	// The id is free again, and an ended client changes nothing.
	connect(t, tr, "c", "")
	c.Exec(ctx, []byte(`{"method":"PUT","resource":"/p/z"}`))
	if got := drain(t, watcher); len(got) != 0 {
		t.Fatalf("ended client changed the tree: %q", got)
	}
	if _, err := tr.Connect("w", ""); err == nil {
		t.Fatal("Connect with a taken id succeeded")
	}
}

// TestNextWaits checks that Next wakes up for a frame queued after it
// started waiting, and returns ctx's error when ctx ends.
func TestNextWaits(t *testing.T) {
	tr := newTree(t, nil, Options{})
	c := connect(t, tr, "c", "")
	done := make(chan []Frame)
	go func() {
		fs, _ := c.Next(context.Background(), nil)
		done <- fs
	}()
	c.Exec(context.Background(), []byte(`{"method":"GET","resource":"/","msg_id":1}`))
	if fs := <-done; len(fs) != 1 || fs[0].Seq != 0 {
		t.Fatalf("got %v", fs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Next(ctx, nil); err != context.Canceled {
		t.Fatalf("got %v", err)
	}
}

// A client drained with TryNext, as the doors drain the tree in process,
// holds no channel to wake Next with: an idle connection would keep it.
// Next makes it, and still wakes for a frame queued after it started
// waiting (TestNextWaits).
func TestTryNextHoldsNoWake(t *testing.T) {
	tr := newTree(t, nil, Options{})
	c := connect(t, tr, "c", "")
	c.Exec(context.Background(), []byte(`{"method":"GET","resource":"/","msg_id":1}`))
	if fs, err := c.TryNext(nil); len(fs) != 1 || err != nil {
		t.Fatalf("TryNext: %v, %v", fs, err)
	}
	if c.wake.Load() != nil {
		t.Error("a client drained with TryNext made a wake channel")
	}
	c.Exec(context.Background(), []byte(`{"method":"GET","resource":"/","msg_id":2}`))
	if fs, err := c.Next(context.Background(), nil); len(fs) != 1 || err != nil {
		t.Fatalf("Next: %v, %v", fs, err)
	}
	if c.wake.Load() == nil {
		t.Error("Next made no wake channel")
	}
}

// TestLease checks a Call with "expires": not stored, deleted with
// notifications when it runs out.
func TestLease(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{})
	ctx := context.Background()
	w := connect(t, tr, "w", "")
	w.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/login/a"}`))
	got := tr.Call(ctx, "http", "a", []byte(`{"method":"PUT","resource":"/login/a","entity":{"c":1},"expires":0.001}`))
	if string(got) != `{"code":"success"}` {
		t.Fatalf("call: %s", got)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var frames []string
	for len(frames) < 2 {
		fs, err := w.Next(wctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			frames = append(frames, string(f.Data))
		}
	}
	want := `{"notify":"PUT","resource":"/login/a","type":"application/json","entity":{"c":1},"from":"http","seq":1}` + "\n" +
		`{"notify":"DELETE","resource":"/login/a","type":null,"entity":null,"from":null,"seq":2}`
	if strings.Join(frames, "\n") != want {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(frames, "\n"), want)
	}
	if len(st.recs) != 0 {
		t.Fatalf("lease stored: %v", st.recs)
	}
	for _, bad := range []string{`0`, `-1`, `1e300`, `"x"`} {
		got := tr.Call(ctx, "", "", []byte(`{"method":"PUT","resource":"/x","expires":`+bad+`}`))
		if !strings.Contains(string(got), `"code":"failed"`) {
			t.Errorf("expires %s: %s", bad, got)
		}
	}
}

// TestGroupCommit checks that concurrent persistent PUTs all reach the
// store, each reply after its own save, and that a failing store fails
// the replies.
func TestGroupCommit(t *testing.T) {
	st := newMemStore()
	tr := newTree(t, st, Options{})
	const clients, puts = 8, 50
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		c := connect(t, tr, fmt.Sprint("c", i), "")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < puts; j++ {
				c.Exec(context.Background(), fmt.Appendf(nil, `{"method":"PUT","resource":"/g/%s/%d","persistent":true,"msg_id":%d}`, c.ID(), j, j))
				st.mu.Lock()
				_, ok := st.recs[fmt.Sprintf("/g/%s/%d", c.ID(), j)]
				st.mu.Unlock()
				if !ok {
					t.Errorf("reply before save of %s %d", c.ID(), j)
				}
			}
		}()
	}
	wg.Wait()
	st.mu.Lock()
	n, saves := len(st.recs), st.saves
	st.fail = true
	st.mu.Unlock()
	if want := clients*puts + clients + 1; n != want {
		t.Fatalf("%d records, want %d", n, want)
	}
	t.Logf("%d puts in %d saves", clients*puts, saves)
	got := tr.Call(context.Background(), "", "", []byte(`{"method":"PUT","resource":"/f","msg_id":1}`))
	if string(got) != `{"msg_id":1,"code":"failed","reason":"store failed"}` {
		t.Fatalf("failing store: %s", got)
	}
}

// TestConcurrent runs clients that write, read, subscribe and disconnect
// at once (for -race), then checks that no transient resource is left.
func TestConcurrent(t *testing.T) {
	tr := newTree(t, newMemStore(), Options{QueueFrames: 64})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for round := 0; round < 20; round++ {
				c, err := tr.Connect(fmt.Sprintf("c%d-%d", i, round), "")
				if err != nil {
					t.Error(err)
					return
				}
				done := make(chan struct{})
				go func() {
					defer close(done)
					var buf []Frame
					for {
						var err error
						if buf, err = c.Next(ctx, buf); err != nil {
							return
						}
					}
				}()
				c.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/shared"}`))
				for j := 0; j < 10; j++ {
					c.Exec(ctx, fmt.Appendf(nil, `{"method":"PUT","resource":"/shared/%d-%d","entity":{"j":%d},"msg_id":1}`, i, j, j))
					c.Exec(ctx, []byte(`{"method":"GET","resource":"/shared?deep=2","msg_id":2}`))
					c.Exec(ctx, []byte(`{"method":"NOTIFY","resource":"/shared","data":1}`))
				}
				c.Exec(ctx, fmt.Appendf(nil, `{"method":"PUT","resource":"/keep/%d","persistent":true}`, i))
				c.Disconnect()
				<-done
			}
		}()
	}
	wg.Wait()
	got := tr.Call(context.Background(), "", "", []byte(`{"method":"GET","resource":"/","msg_id":1}`))
	if string(got) != `{"msg_id":1,"code":"success","resource":"/","type":"application/json","entity":["keep"]}` {
		t.Fatalf("left: %s", got)
	}
}

package tests

import (
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	resoclient "github.com/reso-project/reso/client"
)

// fastClient are client options that reconnect quickly.
func fastClient() *resoclient.Options {
	return &resoclient.Options{BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, ConnectTimeout: 2 * time.Second}
}

// nextEvent returns the subscription's next event, failing t after wait.
func nextEvent(t *testing.T, s *resoclient.Subscription) resoclient.Event {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		if !ok {
			t.Fatalf("%s: the subscription ended: %v", s.Resource(), s.Err())
		}
		return ev
	case <-time.After(wait):
		t.Fatalf("%s: no event within %v", s.Resource(), wait)
	}
	return resoclient.Event{}
}

// waitState waits until c is in state st.
func waitState(t *testing.T, c *resoclient.Client, st resoclient.State) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for c.State() != st {
		if time.Now().After(deadline) {
			t.Fatalf("state %v, want %v", c.State(), st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGoClient: requests and replies, refusals, subscriptions as channels
// and callbacks, SEND over HTTP with credentials, concurrent use.
func TestGoClient(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		cs := startChannel(t, m)
		ctx := ctx(t)
		ws := "ws://" + cs.Addr + "/channel"
		c, err := resoclient.Dial(ctx, ws, fastClient())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		room := "/" + uniq("room-")
		sub, err := c.Subscribe(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Put(ctx, room, map[string]string{"topic": "t"}, true); err != nil {
			t.Fatal(err)
		}
		id, err := c.Post(ctx, room, map[string]string{"text": "hi"}, true)
		if err != nil || id == "" {
			t.Fatalf("POST: %q %v", id, err)
		}
		r, err := c.Get(ctx, room+"?deep=2")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(r.Entity), `[{"rid":"`+id+`","type":"application/json","entity":{"text":"hi"}}]`; got != want {
			t.Errorf("listing %s, want %s", got, want)
		}
		if n, err := c.Notify(ctx, room, map[string]bool{"typing": true}); n != 1 || err != nil {
			t.Errorf("NOTIFY: %d %v", n, err)
		}
		var seqs []uint64
		for _, want := range []string{"PUT", "UPDATE", "NOTIFY"} {
			ev := nextEvent(t, sub)
			if ev.Notification == nil || ev.Notification.Notify != want {
				t.Fatalf("event %+v, want %s", ev, want)
			}
			seqs = append(seqs, ev.Notification.Seq)
		}
		increasing(t, seqs)

		// Refusals carry the server's reason; the connection stays.
		for _, c2 := range []struct {
			msg    resoclient.Message
			reason string
		}{
			{resoclient.Message{Method: "GET", Resource: "/" + uniq("missing-")}, "not found"},
			{resoclient.Message{Method: "PUT", Resource: "/a/../b"}, "invalid resource"},
			{resoclient.Message{Method: "NOTIFY", Resource: "/" + uniq("nobody-"), Data: 1}, "no subscriber"},
			{resoclient.Message{Method: "FROB", Resource: "/x"}, "unknown method"},
			{resoclient.Message{Method: "POST", Resource: room, ID: id}, "exists"},
		} {
			_, err := c.Do(ctx, c2.msg)
			var e *resoclient.Error
			if !errors.As(err, &e) || e.Reason != c2.reason {
				t.Errorf("%s %s: %v, want %q", c2.msg.Method, c2.msg.Resource, err, c2.reason)
			}
		}

		// Callbacks, and concurrent requests from many goroutines.
		var mu sync.Mutex
		var got []uint64
		done := make(chan struct{})
		const n = 40
		room2 := "/" + uniq("cb-")
		if _, err := c.SubscribeFunc(ctx, room2, func(ev resoclient.Event) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, ev.Notification.Seq)
			if len(got) == n {
				close(done)
			}
		}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if err := c.Put(ctx, room2+"/"+strconv.Itoa(i), i, false); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		select {
		case <-done:
		case <-time.After(wait):
			t.Fatal("not every notification came")
		}
		mu.Lock()
		increasing(t, got)
		mu.Unlock()

		// Unsubscribe closes the channel.
		if err := sub.Unsubscribe(ctx); err != nil {
			t.Fatal(err)
		}
		for range sub.Events() {
		}

		// Credentials in the handshake; SEND and CANCEL over HTTP.
		auth := fastClient()
		auth.Header = http.Header{"Authorization": {authBasic("user@example.org", "example")[len("Authorization: "):]}}
		ac, err := resoclient.Dial(ctx, ws, auth)
		if err != nil {
			t.Fatal(err)
		}
		defer ac.Close()
		mine := "/" + uniq("own-") + "/mine"
		if err := ac.Put(ctx, mine, nil, true); err != nil {
			t.Fatal(err)
		}
		rr, err := ac.Do(ctx, resoclient.Message{Method: "RULES", Resource: mine})
		if err != nil || rr.Owner != "user@example.org" {
			t.Errorf("RULES: %+v %v", rr, err)
		}
		_, _, err = ac.Send(ctx, "/login/nobody@example.org", map[string]string{"command": "invite", "url": "/call/x", "id": "i1"})
		var e *resoclient.Error
		if !errors.As(err, &e) || e.Status != 404 || e.Reason != "Not Logged In" {
			t.Errorf("SEND to nobody: %v", err)
		}
	})
}

// TestGoClientReconnect: after dropped connections the client resumes
// each subscription with since: every notification once, in seq order,
// with Recovered; a request whose connection is lost fails with
// ErrConnectionLost and is not sent again; requests while disconnected
// fail at once, or wait in the queue up to its bound.
func TestGoClientReconnect(t *testing.T) {
	cs := startChannel(t, allModes[0])
	ctx := ctx(t)
	proxy := newProxy(t, cs.Addr)
	writer, err := resoclient.Dial(ctx, "ws://"+cs.Addr+"/channel", fastClient())
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	c, err := resoclient.Dial(ctx, "ws://"+proxy.Addr+"/channel", fastClient())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	qopt := fastClient()
	qopt.Queue = 2
	q, err := resoclient.Dial(ctx, "ws://"+proxy.Addr+"/channel", qopt)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()

	room := "/" + uniq("r-")
	if err := writer.Put(ctx, room, nil, true); err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	sent := 0
	for round := range 5 {
		if _, err := writer.Post(ctx, room, map[string]int{"round": round}, true); err != nil {
			t.Fatal(err)
		}
		sent++
		ev := nextEvent(t, sub)
		seqs = append(seqs, ev.Notification.Seq)

		proxy.setDown(true)
		proxy.cut()
		waitState(t, c, resoclient.Reconnecting)
		if _, err := c.Get(ctx, room); !errors.Is(err, resoclient.ErrDisconnected) {
			t.Errorf("GET while disconnected: %v", err)
		}
		for i := range 3 {
			if _, err := writer.Post(ctx, room, map[string]int{"round": round, "i": i}, true); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		proxy.setDown(false)
		for i := range 3 {
			ev := nextEvent(t, sub)
			if ev.Notification == nil {
				t.Fatalf("round %d, missed %d: %+v", round, i, ev)
			}
			seqs = append(seqs, ev.Notification.Seq)
		}
		if ev := nextEvent(t, sub); ev.Resync == nil || !ev.Resync.Recovered {
			t.Fatalf("round %d: %+v, want a recovered resync", round, ev)
		}
	}
	if len(seqs) != sent {
		t.Errorf("%d notifications, %d sent", len(seqs), sent)
	}
	increasing(t, seqs)

	// The queue: two requests wait and go once; a third is refused.
	waitState(t, q, resoclient.Open)
	proxy.setDown(true)
	proxy.cut()
	waitState(t, q, resoclient.Reconnecting)
	qroom := "/" + uniq("q-")
	// Three requests: two wait, one is refused at once (which one does
	// not matter); the refused one is the first to return, since the
	// others wait for the connection.
	results := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := q.Post(ctx, qroom, map[string]int{"i": i}, true)
			results <- err
		}()
	}
	if err := <-results; !errors.Is(err, resoclient.ErrQueueFull) {
		t.Fatalf("the first to return: %v, want ErrQueueFull", err)
	}
	proxy.setDown(false)
	for range 2 {
		if err := <-results; err != nil {
			t.Errorf("queued POST: %v", err)
		}
	}
	r, err := writer.Get(ctx, qroom+"?deep=0")
	if err != nil || string(r.Entity) != `{"count": 2}` && string(r.Entity) != `{"count":2}` {
		t.Errorf("after the queue: %s %v, want 2 children", r.Entity, err)
	}
	waitState(t, c, resoclient.Open)

	// Lost before the reply: the request fails and is not sent again.
	held := "/" + uniq("held-")
	heldBack := proxy.hold()
	errc := make(chan error, 1)
	go func() { errc <- c.Put(ctx, held, nil, true) }()
	<-heldBack
	proxy.cut()
	if err := <-errc; !errors.Is(err, resoclient.ErrConnectionLost) {
		t.Errorf("PUT across the cut: %v, want ErrConnectionLost", err)
	}
	waitState(t, c, resoclient.Open)
	var e *resoclient.Error
	if _, err := c.Get(ctx, held); !errors.As(err, &e) || e.Reason != "not found" {
		t.Errorf("the held PUT was applied or sent again: %v", err)
	}
}

// TestGoClientKill9: across a kill -9 and a restart the client comes back
// by itself, is told that the server did not recover, reloads the state,
// and gets the changes after the restart; Close leaves no goroutine.
func TestGoClientKill9(t *testing.T) {
	before := runtime.NumGoroutine()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cs := startChannel(t, allModes[0], "-addr", addr)
	ctx := ctx(t)
	c, err := resoclient.Dial(ctx, "ws://"+addr+"/channel", fastClient())
	if err != nil {
		t.Fatal(err)
	}
	room := "/" + uniq("k-")
	if err := c.Put(ctx, room, map[string]string{"topic": "t"}, true); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []resoclient.Event
	if _, err := c.SubscribeFunc(ctx, room, func(ev resoclient.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(events)
	}
	until := func(n int) {
		t.Helper()
		deadline := time.Now().Add(wait)
		for count() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d events, want %d", count(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := c.Post(ctx, room, map[string]string{"text": "before"}, true); err != nil {
		t.Fatal(err)
	}
	until(1)
	cs.server.kill()
	waitState(t, c, resoclient.Reconnecting)
	if err := c.Put(ctx, room+"/x", nil, false); !errors.Is(err, resoclient.ErrDisconnected) {
		t.Errorf("PUT while down: %v", err)
	}
	cs.launch()
	until(2)
	mu.Lock()
	rs := events[1].Resync
	mu.Unlock()
	if rs == nil || rs.Recovered {
		t.Fatalf("after the restart: %+v, want a resync without recovery", events[1])
	}
	waitState(t, c, resoclient.Open)
	r, err := c.Get(ctx, room+"?deep=2")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Entity struct{ Text string } `json:"entity"`
	}
	if err := json.Unmarshal(r.Entity, &list); err != nil || len(list) != 1 || list[0].Entity.Text != "before" {
		t.Errorf("the state after the restart: %s %v", r.Entity, err)
	}
	if _, err := c.Post(ctx, room, map[string]string{"text": "after"}, true); err != nil {
		t.Fatal(err)
	}
	until(3)
	mu.Lock()
	first, last := events[0].Notification, events[2].Notification
	mu.Unlock()
	if last == nil || last.Seq <= first.Seq {
		t.Errorf("after the restart: %+v after %+v", last, first)
	}

	c.Close()
	if err := c.Put(ctx, room, nil, true); !errors.Is(err, resoclient.ErrClosed) {
		t.Errorf("PUT after Close: %v", err)
	}
	// Every goroutine of the client ended (a margin for the runtime's and
	// the test harness's own).
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > before+3 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

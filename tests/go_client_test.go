package tests

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// waitDown waits until c has no connection: it is reconnecting, or
// connecting again.
func waitDown(t *testing.T, c *resoclient.Client) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for st := c.State(); st != resoclient.Reconnecting && st != resoclient.Connecting; st = c.State() {
		if time.Now().After(deadline) {
			t.Fatalf("state %v, want reconnecting or connecting", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGoClient: requests and replies, refusals, subscriptions as channels
// and callbacks, SEND over HTTP with credentials, concurrent use.
func TestGoClient(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
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
	t.Parallel()
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
		waitDown(t, c)
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
	waitDown(t, q)
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
	waitDown(t, c)
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

// stateLog records what a client's OnState is given.
type stateLog struct {
	mu     sync.Mutex
	states []resoclient.State
}

func (l *stateLog) add(s resoclient.State) {
	l.mu.Lock()
	l.states = append(l.states, s)
	l.mu.Unlock()
}

func (l *stateLog) get() []resoclient.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]resoclient.State(nil), l.states...)
}

// count returns how many times s was given.
func (l *stateLog) count(s resoclient.State) int {
	n := 0
	for _, x := range l.get() {
		if x == s {
			n++
		}
	}
	return n
}

// until waits until s was given n times.
func (l *stateLog) until(t *testing.T, s resoclient.State, n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for l.count(s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("states %v: want %v %d times", l.get(), s, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkStates checks that states are the documented way of a Client:
// Connecting first, then Open, Reconnecting or Unauthorized; Open to
// Reconnecting; Reconnecting to Connecting; Closed and Unauthorized from
// anywhere and for good (Closed may follow Unauthorized).
func checkStates(t *testing.T, states []resoclient.State) {
	t.Helper()
	next := map[resoclient.State][]resoclient.State{
		resoclient.Connecting:   {resoclient.Open, resoclient.Reconnecting, resoclient.Unauthorized, resoclient.Closed},
		resoclient.Open:         {resoclient.Reconnecting, resoclient.Unauthorized, resoclient.Closed},
		resoclient.Reconnecting: {resoclient.Connecting, resoclient.Unauthorized, resoclient.Closed},
		resoclient.Unauthorized: {resoclient.Closed},
	}
	if len(states) == 0 || states[0] != resoclient.Connecting {
		t.Fatalf("states %v: the first is not connecting", states)
	}
	for i := 1; i < len(states); i++ {
		if !slices.Contains(next[states[i-1]], states[i]) {
			t.Fatalf("states %v: %v after %v", states, states[i], states[i-1])
		}
	}
}

// TestGoClientStates: OnState is given connecting at the first attempt and
// at each attempt after, reconnecting between them, and open once
// connected.
func TestGoClientStates(t *testing.T) {
	t.Parallel()
	cs := startChannel(t, allModes[0])
	ctx := ctx(t)
	proxy := newProxy(t, cs.Addr)
	var log stateLog
	opt := fastClient()
	opt.OnState = log.add
	c, err := resoclient.Dial(ctx, "ws://"+proxy.Addr+"/channel", opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	log.until(t, resoclient.Open, 1)
	if got := log.get(); !slices.Equal(got, []resoclient.State{resoclient.Connecting, resoclient.Open}) {
		t.Errorf("states %v, want [connecting open]", got)
	}

	// Refused twice at least (two attempts more), then let through.
	proxy.setDown(true)
	proxy.cut()
	log.until(t, resoclient.Connecting, 3)
	log.until(t, resoclient.Reconnecting, 2)
	proxy.setDown(false)
	log.until(t, resoclient.Open, 2)
	c.Close()
	states := log.get()
	checkStates(t, states)
	if states[len(states)-1] != resoclient.Closed || c.State() != resoclient.Closed {
		t.Errorf("states %v after Close, State %v", states, c.State())
	}
}

// TestGoClientNewHistory: a server restarted on a new state directory
// numbers seq from 1 again. The client tells the subscription that
// nothing was recovered, and delivers the notifications that follow,
// though their seqs are below the last one it delivered before.
func TestGoClientNewHistory(t *testing.T) {
	t.Parallel()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cs := startChannel(t, allModes[0], "-addr", addr)
	ctx := ctx(t)
	c, err := resoclient.Dial(ctx, "ws://"+addr+"/channel", fastClient())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	room := "/" + uniq("h-")
	sub, err := c.Subscribe(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i := range 10 {
		if _, err := c.Post(ctx, room, map[string]int{"i": i}, true); err != nil {
			t.Fatal(err)
		}
		last = nextEvent(t, sub).Notification.Seq
	}

	cs.server.stop()
	waitDown(t, c)
	startChannel(t, allModes[0], "-addr", addr) // a new -db
	if ev := nextEvent(t, sub); ev.Resync == nil || ev.Resync.Recovered {
		t.Fatalf("%+v, want a resync without recovery", ev)
	}
	if _, err := c.Post(ctx, room, map[string]string{"text": "after"}, true); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, sub)
	if ev.Notification == nil || !strings.Contains(string(ev.Notification.Entity), "after") {
		t.Fatalf("%+v, want the notification of the POST", ev)
	}
	if ev.Notification.Seq >= last {
		t.Fatalf("seq %d after the restart, %d before: the history did not start again", ev.Notification.Seq, last)
	}
}

// TestGoClientEpoch: the history's epoch. A server restarted on a new
// state directory has another epoch; a client resuming with a since of
// the old history is told Recovered false and given none of the new
// history's notifications, though their seqs are above its since; the
// order starts afresh there. Skipped against a server that sends no epoch.
func TestGoClientEpoch(t *testing.T) {
	t.Parallel()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cs := startChannel(t, allModes[0], "-addr", addr)
	ctx := ctx(t)
	epoch := func(w *resoclient.Client) string {
		t.Helper()
		r, err := w.Do(ctx, resoclient.Message{Method: "SUBSCRIBE", Resource: "/" + uniq("e-")})
		if err != nil {
			t.Fatal(err)
		}
		return r.Epoch
	}
	writer, err := resoclient.Dial(ctx, "ws://"+addr+"/channel", fastClient())
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	first := epoch(writer)
	if first == "" {
		t.Skip("the server sends no epoch in its SUBSCRIBE replies (the server side of issue 27 is not there yet)")
	}
	proxy := newProxy(t, addr)
	c, err := resoclient.Dial(ctx, "ws://"+proxy.Addr+"/channel", fastClient())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	room := "/" + uniq("ep-")
	sub, err := c.Subscribe(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Post(ctx, room, map[string]int{"i": 0}, true); err != nil {
		t.Fatal(err)
	}
	last := nextEvent(t, sub).Notification.Seq

	// The client stays away while the server restarts on a new state and
	// its history goes past the client's since.
	proxy.setDown(true)
	cs.server.stop()
	waitDown(t, c)
	startChannel(t, allModes[0], "-addr", addr)
	if err := writer.WaitOpen(ctx); err != nil {
		t.Fatal(err)
	}
	if second := epoch(writer); second == first || second == "" {
		t.Fatalf("epoch %q after the restart on a new state, %q before", second, first)
	}
	ws, err := writer.Subscribe(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := writer.Post(ctx, room, map[string]string{"text": "new"}, true); err != nil {
			t.Fatal(err)
		}
		if nextEvent(t, ws).Notification.Seq > last+1 {
			break
		}
	}
	proxy.setDown(false)
	if ev := nextEvent(t, sub); ev.Resync == nil || ev.Resync.Recovered {
		t.Fatalf("%+v, want a resync without recovery before anything else", ev)
	}
	if _, err := writer.Post(ctx, room, map[string]string{"text": "after"}, true); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, sub); ev.Notification == nil || !strings.Contains(string(ev.Notification.Entity), "after") {
		t.Fatalf("%+v, want the notification of the POST", ev)
	}
}

// TestGoClientURLs: a client given several URLs starts at one of them and
// moves to the next when an attempt fails or its connection ends.
func TestGoClientURLs(t *testing.T) {
	t.Parallel()
	ctx := ctx(t)
	a := startChannel(t, allModes[0], "-addr", "127.0.0.1:"+strconv.Itoa(freePort(t)))
	b := startChannel(t, allModes[0])
	gate := newProxy(t, b.Addr) // the way to b, to refuse it
	direct := func(cs *chanServer) *resoclient.Client {
		t.Helper()
		d, err := resoclient.Dial(ctx, "ws://"+cs.Addr+"/channel", fastClient())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	onB := direct(b)
	// on checks that what c writes now reaches server d.
	on := func(c, d *resoclient.Client, where string) {
		t.Helper()
		res := "/" + uniq("u-")
		if err := c.Put(ctx, res, nil, true); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Get(ctx, res); err != nil {
			t.Fatalf("a PUT of the client is not on %s: %v", where, err)
		}
	}

	a.server.stop()
	wsA, wsB := "ws://"+a.Addr+"/channel", "ws://"+gate.Addr+"/channel"
	var log stateLog
	opt := fastClient()
	opt.URLs = []string{wsA, wsB}
	opt.OnState = log.add
	c, err := resoclient.Dial(ctx, "", opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	on(c, onB, "b, the only one up")

	// b goes away, a comes back: the client moves to a. (Each move is
	// awaited as one more open: the connection may be back before a
	// poll of State would see it down.)
	a.launch()
	onA := direct(a)
	gate.setDown(true)
	gate.cut()
	log.until(t, resoclient.Open, 2)
	on(c, onA, "a, after b went away")

	// a goes away, b is back: the client moves to b again.
	gate.setDown(false)
	a.server.stop()
	log.until(t, resoclient.Open, 3)
	on(c, onB, "b, after a went away")
	checkStates(t, log.get())
}

// startUsers starts reso on a fresh -db file that holds the users
// (e-mail, password), in mode m.
func startUsers(t *testing.T, m mode, users ...[2]string) *chanServer {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "reso.db")
	for _, u := range users {
		if _, errs, code := runReso(t, dir, nil, u[1]+"\n", "user", "add", u[0], "-db", db); code != 0 {
			t.Fatalf("reso user add %s: exit %d: %s", u[0], code, errs)
		}
	}
	cs := &chanServer{t: t, m: m.isolating(channelIsolated), args: []string{"-db", db}, DB: db}
	cs.launch()
	return cs
}

// basic is the Authorization header of email and password.
func basic(email, password string) http.Header {
	return http.Header{"Authorization": {authBasic(email, password)[len("Authorization: "):]}}
}

// TestGoClientCredentials: wrong credentials end the client in the state
// Unauthorized at once; after a password change (which ends the user's
// sessions and so its connections), a client whose HeaderFunc gives the
// new password is back, as that user, and one that keeps the old
// password ends Unauthorized instead of trying again for ever.
func TestGoClientCredentials(t *testing.T) {
	t.Parallel()
	fresh, stale := [2]string{"fresh@example.org", "old-pw"}, [2]string{"stale@example.org", "old-pw"}
	cs := startUsers(t, allModes[0], fresh, stale)
	ctx := ctx(t)
	ws := "ws://" + cs.Addr + "/channel"

	wrong := fastClient()
	wrong.Header = basic(fresh[0], "wrong")
	_, err := resoclient.Dial(ctx, ws, wrong)
	var e *resoclient.Error
	if !errors.Is(err, resoclient.ErrUnauthorized) || !errors.As(err, &e) || e.Status != 401 || e.Reason != "Unauthorized" {
		t.Fatalf("Dial with a wrong password: %v, want ErrUnauthorized with 401 Unauthorized", err)
	}

	var password atomic.Value
	password.Store(fresh[1])
	var calls atomic.Int32
	var freshLog, staleLog stateLog
	fopt := fastClient()
	fopt.ConnectTimeout = wait // a Basic login hashes the password: slow under load
	fopt.OnState = freshLog.add
	fopt.HeaderFunc = func(ctx context.Context) (http.Header, error) {
		calls.Add(1)
		return basic(fresh[0], password.Load().(string)), nil
	}
	fc, err := resoclient.Dial(ctx, ws, fopt)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	sopt := fastClient()
	sopt.ConnectTimeout = wait
	sopt.OnState = staleLog.add
	sopt.Header = basic(stale[0], stale[1])
	sc, err := resoclient.Dial(ctx, ws, sopt)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	room := "/" + uniq("cred-")
	fsub, err := fc.Subscribe(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	ssub, err := sc.Subscribe(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	if n, attempts := calls.Load(), freshLog.count(resoclient.Connecting); int(n) != attempts {
		t.Fatalf("HeaderFunc called %d times for %d attempts", n, attempts)
	}

	password.Store("new-pw")
	for _, u := range [][2]string{fresh, stale} {
		if _, errs, code := runReso(t, t.TempDir(), nil, "new-pw\n", "user", "passwd", u[0], "-db", cs.DB); code != 0 {
			t.Fatalf("reso user passwd %s: exit %d: %s", u[0], code, errs)
		}
	}

	// The stale client ends, and says why.
	staleLog.until(t, resoclient.Unauthorized, 1)
	if !errors.Is(sc.Err(), resoclient.ErrUnauthorized) || !errors.As(sc.Err(), &e) || e.Status != 401 {
		t.Errorf("Err %v, want ErrUnauthorized with 401", sc.Err())
	}
	if sc.State() != resoclient.Unauthorized {
		t.Errorf("state %v", sc.State())
	}
	for range ssub.Events() {
	}
	if !errors.Is(ssub.Err(), resoclient.ErrUnauthorized) {
		t.Errorf("the subscription ended with %v", ssub.Err())
	}
	if _, err := sc.Get(ctx, room); !errors.Is(err, resoclient.ErrUnauthorized) {
		t.Errorf("GET after: %v", err)
	}
	checkStates(t, staleLog.get())

	// The fresh one is back, as its user, with its subscription.
	freshLog.until(t, resoclient.Open, 2)
	if n, attempts := calls.Load(), freshLog.count(resoclient.Connecting); int(n) != attempts || n < 2 {
		t.Errorf("HeaderFunc called %d times for %d attempts", n, attempts)
	}
	if ev := nextEvent(t, fsub); ev.Resync == nil {
		t.Fatalf("%+v, want a resync", ev)
	}
	mine := room + "/mine"
	if err := fc.Put(ctx, mine, nil, true); err != nil {
		t.Fatal(err)
	}
	if r, err := fc.Do(ctx, resoclient.Message{Method: "RULES", Resource: mine}); err != nil || r.Owner != fresh[0] {
		t.Errorf("RULES: %+v %v, want the owner %s", r, err, fresh[0])
	}
	checkStates(t, freshLog.get())
}

// TestGoClientRefusals: the refusals the client makes itself are errors
// of their own, not the server's *Error, and send nothing.
func TestGoClientRefusals(t *testing.T) {
	t.Parallel()
	cs := startChannel(t, allModes[0])
	ctx := ctx(t)
	c, err := resoclient.Dial(ctx, "ws://"+cs.Addr+"/channel", fastClient())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	room := "/" + uniq("ref-")
	sub, err := c.Subscribe(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	var e *resoclient.Error
	if _, err := c.Subscribe(ctx, room); !errors.Is(err, resoclient.ErrSubscribed) || errors.As(err, &e) {
		t.Errorf("a second Subscribe: %v, want ErrSubscribed", err)
	}
	if err := c.Put(ctx, room+"/x", func() {}, true); !errors.Is(err, resoclient.ErrEncode) || errors.As(err, &e) {
		t.Errorf("PUT of a func: %v, want ErrEncode", err)
	}
	// The first subscription goes on.
	if err := c.Put(ctx, room+"/y", 1, true); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, sub); ev.Notification == nil || ev.Notification.Update != "y" {
		t.Errorf("%+v (%+v), want the PUT of y", ev, ev.Notification)
	}
	c.Close()
	if _, err := c.Subscribe(ctx, room); !errors.Is(err, resoclient.ErrClosed) {
		t.Errorf("Subscribe after Close: %v", err)
	}
}

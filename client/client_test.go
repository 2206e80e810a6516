package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reso-project/reso/client"
)

// The tests of this file play the server's side of the channel by hand
// over real WebSocket connections, to reach answers that a reso server
// gives only in rare cases (a history that starts again under a live
// connection, an old server without the epoch). The client against the
// reso binary is tested in tests/go_client_test.go.

// wait bounds every wait of these tests: a hang guard, never a timing
// assertion.
const wait = 15 * time.Second

// scripted is a WebSocket server whose connections the test plays.
type scripted struct {
	t      *testing.T
	url    string
	peers  chan *peer
	refuse atomic.Int32 // when not 0, handshakes are refused with this status
}

// peer is one connection to a scripted server.
type peer struct {
	t    *testing.T
	c    *websocket.Conn
	done chan struct{}
}

func newScripted(t *testing.T) *scripted {
	t.Helper()
	s := &scripted{t: t, peers: make(chan *peer, 16)}
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st := int(s.refuse.Load()); st != 0 {
			http.Error(w, fmt.Sprintf("%d %s", st, http.StatusText(st)), st)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		p := &peer{t: t, c: c, done: make(chan struct{})}
		s.peers <- p
		select {
		case <-p.done:
		case <-stop:
		}
		c.CloseNow()
	}))
	t.Cleanup(func() {
		close(stop)
		srv.Close()
	})
	s.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return s
}

// accept returns the next connection.
func (s *scripted) accept() *peer {
	s.t.Helper()
	select {
	case p := <-s.peers:
		return p
	case <-time.After(wait):
		s.t.Fatalf("no connection within %v", wait)
	}
	return nil
}

// frame is a message of the client as the server reads it.
type frame struct {
	Method   string  `json:"method"`
	Resource string  `json:"resource"`
	MsgID    int64   `json:"msg_id"`
	Since    *uint64 `json:"since"`
	Epoch    *string `json:"epoch"`
}

// read returns the client's next message.
func (p *peer) read() frame {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, b, err := p.c.Read(ctx)
	if err != nil {
		p.t.Fatalf("reading the client: %v", err)
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		p.t.Fatalf("%s: %v", b, err)
	}
	return f
}

// send sends frames to the client.
func (p *peer) send(frames ...string) {
	p.t.Helper()
	for _, f := range frames {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err := p.c.Write(ctx, websocket.MessageText, []byte(f))
		cancel()
		if err != nil {
			p.t.Fatalf("writing %s: %v", f, err)
		}
	}
}

// subscribe reads a SUBSCRIBE of resource and checks its since and epoch
// ("-" for none); it returns its msg_id.
func (p *peer) subscribe(resource, since, epoch string) int64 {
	p.t.Helper()
	f := p.read()
	gotSince, gotEpoch := "-", "-"
	if f.Since != nil {
		gotSince = fmt.Sprint(*f.Since)
	}
	if f.Epoch != nil {
		gotEpoch = *f.Epoch
	}
	if f.Method != "SUBSCRIBE" || f.Resource != resource || gotSince != since || gotEpoch != epoch {
		p.t.Fatalf("%+v (since %s, epoch %s), want SUBSCRIBE %s since %s epoch %s", f, gotSince, gotEpoch, resource, since, epoch)
	}
	return f.MsgID
}

// close ends the connection.
func (p *peer) close() { close(p.done) }

// note is a notification of a POST to resource with that seq.
func note(resource string, seq uint64) string {
	return fmt.Sprintf(`{"notify":"POST","resource":%q,"create":"c%d","entity":{},"seq":%d}`, resource, seq, seq)
}

// next returns the subscription's next event.
func next(t *testing.T, s *client.Subscription) client.Event {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		if !ok {
			t.Fatalf("the subscription ended: %v", s.Err())
		}
		return ev
	case <-time.After(wait):
		t.Fatalf("no event within %v", wait)
	}
	return client.Event{}
}

// wantSeq checks that ev is the notification with seq.
func wantSeq(t *testing.T, ev client.Event, seq uint64) {
	t.Helper()
	if ev.Notification == nil || ev.Notification.Seq != seq {
		t.Fatalf("%+v (notification %+v), want the notification of seq %d", ev, ev.Notification, seq)
	}
}

// wantResync checks that ev is a Resync that says recovered.
func wantResync(t *testing.T, ev client.Event, recovered bool) {
	t.Helper()
	if ev.Resync == nil || ev.Resync.Recovered != recovered {
		t.Fatalf("%+v (notification %+v), want a resync with recovered %v", ev, ev.Notification, recovered)
	}
}

func fast() *client.Options {
	return &client.Options{BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, ConnectTimeout: wait}
}

// subscribed dials srv and subscribes to resource, answering with
// reply's fields ("" for none); it returns the client, the subscription
// and the connection.
func subscribed(t *testing.T, srv *scripted, resource, reply string) (*client.Client, *client.Subscription, *peer) {
	t.Helper()
	c := client.New(srv.url, fast())
	t.Cleanup(func() { c.Close() })
	p := srv.accept()
	type res struct {
		s   *client.Subscription
		err error
	}
	got := make(chan res, 1)
	go func() {
		s, err := c.Subscribe(context.Background(), resource)
		got <- res{s, err}
	}()
	id := p.subscribe(resource, "-", "-")
	p.send(fmt.Sprintf(`{"msg_id":%d,"code":"success"%s}`, id, reply))
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	return c, r.s, p
}

// TestEpoch: the client keeps the epoch of its subscription's reply and
// sends it with since; when a reply's epoch differs, the subscription is
// told Recovered false and its seq order starts afresh, so that the new
// history's notifications, numbered from 1 again, reach the app.
func TestEpoch(t *testing.T) {
	srv := newScripted(t)
	_, sub, p := subscribed(t, srv, "/r", `,"epoch":"e1"`)
	p.send(note("/r", 22), note("/r", 23))
	wantSeq(t, next(t, sub), 22)
	wantSeq(t, next(t, sub), 23)
	p.close()

	// The server came back on a new state: another epoch.
	p = srv.accept()
	id := p.subscribe("/r", "23", "e1")
	p.send(fmt.Sprintf(`{"msg_id":%d,"code":"success","recovered":false,"epoch":"e2"}`, id), note("/r", 1), note("/r", 2))
	wantResync(t, next(t, sub), false)
	wantSeq(t, next(t, sub), 1)
	wantSeq(t, next(t, sub), 2)
	p.close()

	// Resumed in the new history; a reply that claims recovery across
	// two epochs is not believed.
	p = srv.accept()
	id = p.subscribe("/r", "2", "e2")
	p.send(note("/r", 3), fmt.Sprintf(`{"msg_id":%d,"code":"success","recovered":true,"epoch":"e2"}`, id))
	wantSeq(t, next(t, sub), 3)
	wantResync(t, next(t, sub), true)
	p.close()
	p = srv.accept()
	id = p.subscribe("/r", "3", "e2")
	p.send(fmt.Sprintf(`{"msg_id":%d,"code":"success","recovered":true,"epoch":"e3"}`, id), note("/r", 1))
	wantResync(t, next(t, sub), false)
	wantSeq(t, next(t, sub), 1)
}

// TestNoEpoch: a server that sends no epoch. A reply recovered:false
// starts the seq order afresh (the app reads the state again, and a
// server restarted on a new state numbers from 1); a replay at or below
// the last seq before the reply is dropped, as before; a seq that goes
// back after the reply (the history started again under the connection)
// gives a Resync without recovery and is delivered, and so is what
// follows.
func TestNoEpoch(t *testing.T) {
	srv := newScripted(t)
	_, sub, p := subscribed(t, srv, "/r", "")
	p.send(note("/r", 22), note("/r", 23))
	wantSeq(t, next(t, sub), 22)
	wantSeq(t, next(t, sub), 23)
	p.close()

	p = srv.accept()
	id := p.subscribe("/r", "23", "-")
	p.send(fmt.Sprintf(`{"msg_id":%d,"code":"success","recovered":false}`, id), note("/r", 1), note("/r", 2))
	wantResync(t, next(t, sub), false)
	wantSeq(t, next(t, sub), 1)
	wantSeq(t, next(t, sub), 2)
	p.close()

	// A replay of what the app has, before the reply, is dropped.
	p = srv.accept()
	id = p.subscribe("/r", "2", "-")
	p.send(note("/r", 2), note("/r", 3), fmt.Sprintf(`{"msg_id":%d,"code":"success","recovered":true}`, id))
	wantSeq(t, next(t, sub), 3)
	wantResync(t, next(t, sub), true)

	// After the reply, a seq that went back.
	p.send(note("/r", 4), note("/r", 2), note("/r", 3))
	wantSeq(t, next(t, sub), 4)
	wantResync(t, next(t, sub), false)
	wantSeq(t, next(t, sub), 2)
	wantSeq(t, next(t, sub), 3)
	p.close()
	p = srv.accept()
	p.subscribe("/r", "3", "-")
}

// TestRefusedHandshake: a handshake answered 403 ends the client in the
// state Unauthorized, with an error that wraps ErrUnauthorized and the
// server's status and reason; a subscription waiting for the connection
// ends with it, and so does every later request.
func TestRefusedHandshake(t *testing.T) {
	srv := newScripted(t)
	srv.refuse.Store(http.StatusForbidden)
	var states []client.State
	statec := make(chan client.State, 16)
	opt := fast()
	opt.OnState = func(s client.State) { statec <- s }
	c := client.New(srv.url, opt)
	defer c.Close()
	_, err := c.Subscribe(context.Background(), "/r")
	var e *client.Error
	if !errors.Is(err, client.ErrUnauthorized) || !errors.As(err, &e) || e.Status != 403 || e.Reason != "Forbidden" {
		t.Fatalf("Subscribe: %v, want ErrUnauthorized with 403 Forbidden", err)
	}
	if c.State() != client.Unauthorized || c.Err() != err {
		t.Errorf("state %v, Err %v", c.State(), c.Err())
	}
	if _, err := c.Get(context.Background(), "/r"); err != c.Err() {
		t.Errorf("GET after: %v", err)
	}
	for len(states) < 2 {
		states = append(states, <-statec)
	}
	if states[0] != client.Connecting || states[1] != client.Unauthorized {
		t.Errorf("states %v, want [connecting unauthorized]", states)
	}
	c.Close()
	if c.State() != client.Closed || !errors.Is(c.Err(), client.ErrUnauthorized) {
		t.Errorf("after Close: %v %v", c.State(), c.Err())
	}
	if _, err := client.Dial(context.Background(), srv.url, fast()); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("Dial: %v, want ErrUnauthorized", err)
	}
}

// TestDialGivesUp: Dial whose context ends before a connection opens
// returns the context's error and says why the last attempt failed; the
// client it made is closed.
func TestDialGivesUp(t *testing.T) {
	srv := newScripted(t)
	srv.refuse.Store(http.StatusServiceUnavailable)
	ctx, cancel := context.WithCancel(context.Background())
	opt := fast()
	failed := make(chan struct{})
	var once atomic.Bool
	opt.OnState = func(s client.State) {
		if s == client.Reconnecting && once.CompareAndSwap(false, true) {
			close(failed) // an attempt failed
		}
	}
	errc := make(chan error, 1)
	go func() {
		_, err := client.Dial(ctx, srv.url, opt)
		errc <- err
	}()
	select {
	case <-failed:
	case <-time.After(wait):
		t.Fatal("no attempt failed")
	}
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "503") {
		t.Errorf("Dial: %v, want context.Canceled and the 503 of the last attempt", err)
	}
}

// TestSubscribeWhileConnecting: a Subscribe made while the client
// connects is sent on that connection, however the call falls against
// the connection's start (.ci/run once lost one that came after the
// connection had taken its list of subscriptions and before it opened:
// TestEpoch then waited for a SUBSCRIBE that never came). The window is
// narrow: this test repeats the race, it does not force it.
func TestSubscribeWhileConnecting(t *testing.T) {
	srv := newScripted(t)
	for i := range 50 {
		c := client.New(srv.url, fast())
		done := make(chan error, 1)
		go func() {
			_, err := c.Subscribe(context.Background(), "/r")
			done <- err
		}()
		p := srv.accept()
		id := p.subscribe("/r", "-", "-")
		p.send(fmt.Sprintf(`{"msg_id":%d,"code":"success","epoch":"e1"}`, id))
		if err := <-done; err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		c.Close()
		p.close()
	}
}

// responder answers, on p, every SUBSCRIBE with success (recovered true,
// epoch e1) and every other request with success (id "n"), until the
// connection ends.
func (p *peer) responder() {
	go func() {
		for {
			_, b, err := p.c.Read(context.Background())
			if err != nil {
				return
			}
			var f frame
			if json.Unmarshal(b, &f) != nil {
				continue
			}
			reply := fmt.Sprintf(`{"msg_id":%d,"code":"success","id":"n"}`, f.MsgID)
			if f.Method == "SUBSCRIBE" {
				reply = fmt.Sprintf(`{"msg_id":%d,"code":"success","recovered":true,"epoch":"e1"}`, f.MsgID)
			}
			if p.c.Write(context.Background(), websocket.MessageText, []byte(reply)) != nil {
				return
			}
		}
	}()
}

// TestEventsWhenOpen: a subscription's events, and Subscribe's return,
// come only once the client is open, so that a request made on them is
// sent. TestGoClientNewHistory once got ErrDisconnected from a Post made
// right after a Resync: the reply to a SUBSCRIBE came in while the client
// was still writing the frames of its reconnect, before it counted itself
// open. With many subscriptions the first replies come in while the later
// frames are still being written: the server answers each at once, and
// each Resync makes a Post from the subscription's callback. The window
// is narrow: this test repeats the race over reconnects, it does not
// force it.
func TestEventsWhenOpen(t *testing.T) {
	const subs, rounds = 40, 20
	srv := newScripted(t)
	c := client.New(srv.url, fast())
	defer c.Close()
	type got struct {
		state client.State
		err   error
	}
	posts := make(chan got, 2*subs)
	onEvent := func(ev client.Event) {
		if ev.Resync == nil {
			return
		}
		// The state first: the Post may still succeed once the client
		// has opened meanwhile.
		st := c.State()
		_, err := c.Post(context.Background(), "/r", nil, false)
		posts <- got{st, err}
	}
	// Made before the first connection: their frames go out with it.
	subscribed := make(chan got, subs)
	for i := range subs {
		go func() {
			_, err := c.SubscribeFunc(context.Background(), fmt.Sprintf("/r%d", i), onEvent)
			subscribed <- got{c.State(), err}
		}()
	}
	p := srv.accept()
	p.responder()
	for range subs {
		if g := <-subscribed; g.err != nil || g.state != client.Open {
			t.Fatalf("Subscribe: %v, with the client in the state %v once it returned", g.err, g.state)
		}
	}
	for round := range rounds {
		p.close()
		p = srv.accept()
		p.responder()
		for range subs {
			var g got
			select {
			case g = <-posts:
			case <-time.After(wait):
				t.Fatalf("round %d: no Resync within %v", round, wait)
			}
			if g.err != nil || g.state != client.Open {
				t.Fatalf("round %d: a Post made on a Resync: %v, with the client in the state %v at the Resync", round, g.err, g.state)
			}
		}
	}
}

// TestEventsWhenOpenAfterAnEnd: a connection that ends before the client
// opened on it leaves its events held until the client opens on the next
// one. TestGoClientNewHistory once got ErrDisconnected from a Post made
// right after a Resync: the reply to a SUBSCRIBE came in while the client
// was still writing the frames of its reconnect, and the connection ended
// before the client opened on it. Here the frames are too many to fit in
// the sockets' buffers (the client's send buffer is made small), so the
// client is still writing when the server, having read the first
// SUBSCRIBE, answers it and refuses the next one for now (unavailable: the
// client ends the connection, see TestResubscribeRefusedForNow) without
// reading more: each round makes the race happen, and every Resync must
// find the client open.
func TestEventsWhenOpenAfterAnEnd(t *testing.T) {
	const subs, rounds = 60, 10
	srv := newScripted(t)
	opt := fast()
	opt.HTTPClient = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetWriteBuffer(4096)
			}
			return conn, err
		},
	}}
	c := client.New(srv.url, opt)
	defer c.Close()
	type got struct {
		state client.State
		err   error
	}
	posts := make(chan got, 4*subs)
	onEvent := func(ev client.Event) {
		if ev.Resync == nil {
			return
		}
		st := c.State()
		_, err := c.Post(context.Background(), "/r", nil, false)
		posts <- got{st, err}
	}
	// Long names: the SUBSCRIBE frames of a reconnect are 480 kB.
	long := strings.Repeat("x", 8000)
	subscribed := make(chan error, subs)
	for i := range subs {
		go func() {
			_, err := c.SubscribeFunc(context.Background(), fmt.Sprintf("/r%d/%s", i, long), onEvent)
			subscribed <- err
		}()
	}
	p := srv.accept()
	p.responder()
	for range subs {
		if err := <-subscribed; err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
	}
	for round := range rounds {
		p.close()
		// The connection that ends: the first SUBSCRIBE is answered (a
		// Resync, held), the next one (its msg_id follows) is refused.
		// It is closed once the client made the next one: a close with
		// unread data resets the connection, which could lose the
		// frames sent.
		ending := srv.accept()
		f := ending.read()
		ending.send(fmt.Sprintf(`{"msg_id":%d,"code":"success","recovered":false,"epoch":"e1"}`, f.MsgID),
			fmt.Sprintf(`{"msg_id":%d,"code":"failed","reason":"unavailable"}`, f.MsgID+1))
		// The next one answers everything: a Resync for each
		// subscription, and one more for the first one's.
		p = srv.accept()
		ending.close()
		p.responder()
		for range subs + 1 {
			var g got
			select {
			case g = <-posts:
			case <-time.After(wait):
				t.Fatalf("round %d: no Resync within %v", round, wait)
			}
			if g.err != nil || g.state != client.Open {
				t.Fatalf("round %d: a Post made on a Resync: %v, with the client in the state %v at the Resync", round, g.err, g.state)
			}
		}
	}
}

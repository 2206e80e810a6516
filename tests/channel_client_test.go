package tests

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsGroup is the WebSocket clients of one test on one server. Each client
// has a label ("$A", "$B", ...) that expected frames use in place of its
// client id, which the server chooses.
type wsGroup struct {
	t  *testing.T
	cs *chanServer

	mu  sync.Mutex
	ids map[string]string // label -> the client id as JSON
}

// clients returns a group of clients of cs.
func clients(t *testing.T, cs *chanServer) *wsGroup {
	return &wsGroup{t: t, cs: cs, ids: map[string]string{}}
}

// fill replaces the labels of the group's clients in s by their ids.
func (g *wsGroup) fill(s string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var pairs []string
	for label, id := range g.ids {
		pairs = append(pairs, label, id)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// wsOptions are the less common ways of dialing.
type wsOptions struct {
	header http.Header // added to the handshake (Origin, credentials)
	noRead bool        // do not read frames until startReading
	noID   bool        // do not learn the client id
}

// wsClient is one WebSocket connection to /channel. A read pump moves
// every frame into a channel, so the server never waits for the test; a
// frame read while waiting for a reply is kept for the next expect.
type wsClient struct {
	t     *testing.T
	g     *wsGroup
	label string
	conn  *websocket.Conn
	tcp   net.Conn // the connection under conn, to drop it without a close frame

	ctx    context.Context
	cancel context.CancelFunc
	frames chan string
	done   chan struct{}
	err    error // why reading ended, once done is closed

	backlog []string
	once    sync.Once
	// guard bounds the wait for one frame (0: wait, the hang guard); a
	// test raises it for an answer that comes after a burst.
	guard time.Duration
}

// dial connects a client labelled label (learning its client id unless
// told not to) and closes it when the test ends.
func (g *wsGroup) dial(label string, opts ...wsOptions) *wsClient {
	g.t.Helper()
	var o wsOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	c, resp, err := g.dialRaw(o)
	if err != nil {
		status := ""
		if resp != nil {
			status = resp.Status
		}
		g.t.Fatalf("dialing %s: %v %s", label, err, status)
	}
	c.label = label
	if !o.noRead {
		c.startReading()
	}
	if !o.noID {
		c.learnID()
	}
	return c
}

// dialRaw performs the handshake and returns the client (not reading yet)
// or the handshake's answer and error.
func (g *wsGroup) dialRaw(o wsOptions) (*wsClient, *http.Response, error) {
	c := &wsClient{t: g.t, g: g, frames: make(chan string, 1<<14), done: make(chan struct{})}
	var mu sync.Mutex
	transport := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			mu.Lock()
			c.tcp = conn
			mu.Unlock()
			return conn, err
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws://"+g.cs.Addr+"/channel", &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: transport},
		HTTPHeader: o.header,
	})
	if err != nil {
		transport.CloseIdleConnections()
		return nil, resp, err
	}
	conn.SetReadLimit(64 << 20)
	c.conn = conn
	c.ctx, c.cancel = context.WithCancel(context.Background())
	g.t.Cleanup(c.close)
	return c, resp, nil
}

// startReading starts the read pump.
func (c *wsClient) startReading() {
	go func() {
		defer close(c.done)
		for {
			typ, data, err := c.conn.Read(c.ctx)
			if err != nil {
				c.err = err
				return
			}
			if typ != websocket.MessageText {
				c.err = errors.New("a binary frame")
				return
			}
			select {
			case c.frames <- string(data):
			case <-c.ctx.Done():
				c.err = c.ctx.Err()
				return
			}
		}
	}()
}

// learnID subscribes to a path of its own, notifies it and takes the
// "from" of its own notification as its client id.
func (c *wsClient) learnID() {
	c.t.Helper()
	p := "/" + uniq("whoami-")
	if r := anyEpoch(c.call(`{"method":"SUBSCRIBE","resource":"` + p + `","msg_id":"id-1"}`)); r != `{"msg_id":"id-1","code":"success","epoch":"E"}` {
		c.t.Fatalf("%s: learning the client id: SUBSCRIBE: %s", c.label, r)
	}
	r := c.call(`{"method":"NOTIFY","resource":"` + p + `","msg_id":"id-2"}`)
	if r != `{"msg_id":"id-2","code":"success","sent_count":1}` {
		c.t.Fatalf("%s: learning the client id: NOTIFY: %s", c.label, r)
	}
	n := c.next()
	id := field(n, "from")
	if !strings.HasPrefix(id, `"`) {
		c.t.Fatalf("%s: learning the client id: no string from in %s", c.label, n)
	}
	if got, _ := withoutSeq(n); got != `{"notify":"NOTIFY","resource":"`+p+`","data":null,"from":`+id+`,"seq":N}` {
		c.t.Fatalf("%s: learning the client id: notification %s", c.label, n)
	}
	if r := c.call(`{"method":"UNSUBSCRIBE","resource":"` + p + `","msg_id":"id-3"}`); r != `{"msg_id":"id-3","code":"success"}` {
		c.t.Fatalf("%s: learning the client id: UNSUBSCRIBE: %s", c.label, r)
	}
	c.g.mu.Lock()
	for label, other := range c.g.ids {
		if other == id {
			c.t.Errorf("%s and %s have the same client id %s", label, c.label, id)
		}
	}
	c.g.ids[c.label] = id
	c.g.mu.Unlock()
}

// ID returns the client id as JSON.
func (c *wsClient) ID() string {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	return c.g.ids[c.label]
}

// send writes one text frame: msg as it is when it is a string, else its
// JSON.
func (c *wsClient) send(msg any) {
	c.t.Helper()
	data, ok := msg.(string)
	if !ok {
		b, err := json.Marshal(msg)
		if err != nil {
			c.t.Fatal(err)
		}
		data = string(b)
	}
	ctx, cancel := context.WithTimeout(c.ctx, wait)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, []byte(data)); err != nil {
		c.t.Fatalf("%s: sending %s: %v", c.label, describe(data), err)
	}
}

// read returns the next frame, or false with the reason when reading ended
// or nothing came within the hang guard.
func (c *wsClient) read() (string, error) {
	if len(c.backlog) > 0 {
		f := c.backlog[0]
		c.backlog = c.backlog[1:]
		return f, nil
	}
	select {
	case f := <-c.frames:
		return f, nil
	case <-c.done:
		select {
		case f := <-c.frames:
			return f, nil
		default:
		}
		return "", c.err
	case <-time.After(cmp.Or(c.guard, wait)):
		return "", errors.New("no frame within the hang guard")
	}
}

// next returns the next frame or fails the test.
func (c *wsClient) next() string {
	c.t.Helper()
	f, err := c.read()
	if err != nil {
		c.t.Fatalf("%s: waiting for a frame: %v", c.label, err)
	}
	return f
}

// call sends msg, which must carry a msg_id, and returns the reply with
// that msg_id; frames before it are kept for expect.
func (c *wsClient) call(msg string) string {
	c.t.Helper()
	id := field(msg, "msg_id")
	if id == "" {
		c.t.Fatalf("call without msg_id: %s", msg)
	}
	c.send(msg)
	var kept []string
	defer func() { c.backlog = append(kept, c.backlog...) }()
	for {
		f := c.next()
		if field(f, "notify") == "" && field(f, "msg_id") == id {
			return f
		}
		kept = append(kept, f)
	}
}

// tryCall is call for a connection that may end first: it returns the
// error instead of failing the test.
func (c *wsClient) tryCall(msg string) (string, error) {
	id := field(msg, "msg_id")
	ctx, cancel := context.WithTimeout(c.ctx, wait)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		return "", err
	}
	for {
		f, err := c.read()
		if err != nil {
			return "", err
		}
		if field(f, "notify") == "" && field(f, "msg_id") == id {
			return f, nil
		}
	}
}

// expect reads the next len(want) frames and compares them byte for byte,
// with the labels of want replaced by client ids, every seq by N and the
// epoch of a SUBSCRIBE reply by E; it
// returns the seqs of the notifications, which must increase.
func (c *wsClient) expect(want ...string) []uint64 {
	c.t.Helper()
	var seqs []uint64
	for i, w := range want {
		f, err := c.read()
		if err != nil {
			c.t.Fatalf("%s: frame %d of %d: %v; want %s", c.label, i+1, len(want), err, c.g.fill(w))
		}
		got, seq := withoutSeq(anyEpoch(f))
		if w := c.g.fill(w); got != w {
			c.t.Errorf("%s: frame %d:\n got %s\nwant %s", c.label, i+1, describe(f), w)
		}
		if seq != 0 {
			seqs = append(seqs, seq)
		}
	}
	increasing(c.t, seqs)
	return seqs
}

// quiet checks that no frame is waiting beyond those already read, after
// a round trip that the server answers only after everything it queued
// before.
func (c *wsClient) quiet() {
	c.t.Helper()
	p := "/" + uniq("quiet-")
	if r := c.call(`{"method":"GET","resource":"` + p + `","msg_id":"quiet"}`); r != `{"msg_id":"quiet","code":"failed","reason":"not found"}` {
		c.t.Errorf("%s: GET %s: %s", c.label, p, r)
	}
	if len(c.backlog) > 0 {
		c.t.Errorf("%s: unexpected frames: %q", c.label, c.backlog)
		c.backlog = nil
	}
}

// closed waits until reading ends and returns the close code and reason
// (-1 and the error when the connection ended without a close frame).
func (c *wsClient) closed() (websocket.StatusCode, string) {
	c.t.Helper()
	for {
		_, err := c.read()
		if err == nil {
			continue
		}
		if err.Error() == "no frame within the hang guard" {
			c.t.Fatalf("%s: the connection stays open", c.label)
		}
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Reason
		}
		return -1, err.Error()
	}
}

// drop closes the TCP connection without a close frame, as a network loss
// would.
func (c *wsClient) drop() {
	c.tcp.Close()
}

// closeNormal ends the connection with a close frame (1000) and waits
// for the server's.
func (c *wsClient) closeNormal() {
	c.t.Helper()
	if err := c.conn.Close(websocket.StatusNormalClosure, "bye"); err != nil {
		c.t.Errorf("%s: closing: %v", c.label, err)
	}
	c.close()
}

// close releases the connection at once (once), with no handshake.
func (c *wsClient) close() {
	c.once.Do(func() {
		c.conn.CloseNow()
		c.cancel()
		c.tcp.Close()
	})
}

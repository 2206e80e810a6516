package tests

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// allowedOrigin is a cross origin the tests allow with -channel-origin,
// as the flag's value and as a browser would send it.
const (
	allowedOriginFlag   = "allowed.example"
	allowedOriginHeader = "http://allowed.example"
)

// handshake is a WebSocket opening handshake for /channel from origin
// ("" none).
func handshake(addr, origin string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "GET /channel HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n", addr)
	b.WriteString("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n")
	if origin != "" {
		b.WriteString("Origin: " + origin + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// TestChannelOrigin: a cross-origin handshake answers 403 Forbidden and
// upgrades nothing, unless -channel-origin allows that origin; the same
// host, and a client that sends no Origin (not a browser), are let in.
func TestChannelOrigin(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		for _, allow := range []bool{false, true} {
			t.Run("allow="+strconv.FormatBool(allow), func(t *testing.T) {
				var cs *chanServer
				if allow {
					cs = startChannel(t, m, flagChannelOrigin, allowedOriginFlag)
				} else {
					cs = sharedChannel(t, m) // the default flags
				}
				g := clients(t, cs)
				for _, origin := range []string{"http://evil.example", "http://" + cs.Addr + ".evil.example", "null"} {
					r := raw(t, cs.Addr, handshake(cs.Addr, origin))
					if r.StatusLine != "HTTP/1.1 403 Forbidden" || r.Header.Get("Upgrade") != "" || r.Header.Get("Sec-Websocket-Accept") != "" {
						t.Errorf("Origin %s: %s %v", origin, r.StatusLine, r.Header)
					}
				}
				r := raw(t, cs.Addr, handshake(cs.Addr, allowedOriginHeader))
				if allow != (r.StatusLine == "HTTP/1.1 101 Switching Protocols") {
					t.Errorf("Origin %s with allow=%v: %s", allowedOriginHeader, allow, r.StatusLine)
				}
				if !allow && r.StatusLine != "HTTP/1.1 403 Forbidden" {
					t.Errorf("Origin %s: %s", allowedOriginHeader, r.StatusLine)
				}
				g.dial("$N").quiet() // no Origin
				g.dial("$O", wsOptions{header: http.Header{"Origin": {"http://" + cs.Addr}}}).quiet()
				if allow {
					c := g.dial("$allowed", wsOptions{header: http.Header{"Origin": {allowedOriginHeader}}})
					c.quiet()
				}
			})
		}
	})
}

// TestChannelOversized: a message of exactly the read limit is read; a
// bigger one closes the connection with 1009, and the server goes on
// serving others.
func TestChannelOversized(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		a := g.dial("$A")
		p := jsonString("/" + uniq("big-"))
		sized := func(n int) string {
			head := `{"method":"PUT","resource":` + p + `,"msg_id":1,"entity":"`
			return head + strings.Repeat("x", n-len(head)-2) + `"}`
		}
		msg := sized(chanReadLimit)
		if len(msg) != chanReadLimit {
			t.Fatalf("built %d bytes", len(msg))
		}
		if got := a.call(msg); got != `{"msg_id":1,"code":"success"}` {
			t.Fatalf("a message of %d bytes: %s", len(msg), describe(got))
		}
		a.send(sized(chanReadLimit + 1))
		if code, reason := a.closed(); code != closeTooBig {
			t.Errorf("a message of %d bytes: close %d %q, want %d", chanReadLimit+1, code, reason, closeTooBig)
		}
		b := g.dial("$B")
		if got := b.call(`{"method":"NOTIFY","resource":` + p + `,"msg_id":2}`); got != `{"msg_id":2,"code":"failed","reason":"no subscriber"}` {
			t.Errorf("another client: %s", describe(got))
		}
	})
}

// TestChannelSlowConsumer: a subscriber that never reads while another
// client floods NOTIFYs with big data is disconnected (close 1008 "slow
// consumer", or its connection dropped) once its queue is full; the
// flooding client and a subscriber that reads keep working and receive
// everything, in order.
func TestChannelSlowConsumer(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := startChannel(t, m, "-admin-addr", "127.0.0.1:0")
		g := clients(t, cs)
		p := jsonString("/" + uniq("flood-"))
		reader := g.dial("$R")
		reader.call(`{"method":"SUBSCRIBE","resource":` + p + `,"msg_id":1}`)
		slow := g.dial("$S", wsOptions{noRead: true, noID: true})
		slow.send(`{"method":"SUBSCRIBE","resource":` + p + `}`)
		flooder := g.dial("$F")

		data := repeat(60000) // under the read limit with the rest of the message
		const most = 3000     // about 180 MB: far more than any queue and socket buffers hold
		sawSlow := false
		for i := 1; ; i++ {
			if i > most {
				t.Fatalf("the slow consumer still counted after %d NOTIFYs of %d bytes", most, len(data))
			}
			reply := flooder.call(`{"method":"NOTIFY","resource":` + p + `,"data":` + data + `,"msg_id":` + strconv.Itoa(i) + `}`)
			n := reader.next()
			if want := `{"notify":"NOTIFY","resource":` + p + `,"data":` + data + `,"from":` + flooder.ID(); !strings.HasPrefix(n, want) {
				t.Fatalf("the reader's notification %d: %s", i, describe(n))
			}
			switch reply {
			case `{"msg_id":` + strconv.Itoa(i) + `,"code":"success","sent_count":2}`:
				sawSlow = true
				continue
			case `{"msg_id":` + strconv.Itoa(i) + `,"code":"success","sent_count":1}`:
				if !sawSlow {
					continue // the slow client's SUBSCRIBE is not in yet
				}
				if cs.fleet != nil && sumMetric(t, cs, "reso_channel_slow_consumer_disconnects_total") == 0 &&
					sumMetric(t, cs, "reso_channel_connections") > 2 {
					// A fleet's count misses a node whose report came
					// after 1 s (docs/fleet.md §4), as on a loaded
					// machine: the drop is the nodes' to say, a slow
					// consumer counted or the connection gone (a write
					// that waited out the WebSocket write timeout, 10 s, when the
					// NOTIFYs come too slowly to fill the queue first).
					continue
				}
			default:
				t.Fatalf("NOTIFY %d: %s", i, describe(reply))
			}
			t.Logf("the slow consumer was dropped after %d NOTIFYs", i)
			break
		}
		slow.startReading()
		code, reason := slow.closed()
		t.Logf("the slow consumer's end: %d %q", code, reason)
		if code != -1 && (code != closePolicy || reason != "slow consumer") {
			t.Errorf("the slow consumer: close %d %q, want %d \"slow consumer\" or a dropped connection", code, reason, closePolicy)
		}
		// The others go on.
		flooder.send(`{"method":"NOTIFY","resource":` + p + `,"data":"after","msg_id":"last"}`)
		flooder.expect(`{"msg_id":"last","code":"success","sent_count":1}`)
		reader.expect(`{"notify":"NOTIFY","resource":` + p + `,"data":"after","from":$F,"seq":N}`)
		reader.quiet()
		flooder.quiet()
	})
}

// sumMetric returns the sum over cs's processes of the metric name, as
// their admin listeners report it.
func sumMetric(t *testing.T, cs *chanServer, name string) float64 {
	t.Helper()
	n := 0.0
	for _, s := range cs.processes() {
		v, _ := value(scrape(t, adminURL(t, s)), name)
		n += v
	}
	return n
}

// TestChannelShutdown: on SIGTERM every WebSocket connection is closed
// with 1001 (going away), and the server exits 0.
func TestChannelShutdown(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := startChannel(t, m)
		g := clients(t, cs)
		a, b := g.dial("$A"), g.dial("$B")
		b.call(`{"method":"SUBSCRIBE","resource":"/` + uniq("s-") + `","msg_id":1}`)
		for _, s := range cs.processes() {
			s.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, c := range []*wsClient{a, b} {
			if code, reason := c.closed(); code != closeGoingAway {
				t.Errorf("%s: close %d %q, want %d", c.label, code, reason, closeGoingAway)
			}
		}
		for _, s := range cs.processes() {
			if code := exitStatus(t, s); code != 0 {
				t.Errorf("exit status %d", code)
			}
		}
	})
}

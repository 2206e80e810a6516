package tests

import (
	"strings"
	"testing"
	"time"
)

// The flags bounding the invitations waiting for one user
// (docs/call.md#flags).
const (
	flagCallWaitCount = "-call-wait-count"
	flagCallWaitBytes = "-call-wait-bytes"
)

// TestCallWaitingOnce: an invitation that waits while the retry loop
// offers it again and again is delivered once, and enters the replay
// history once: a session that subscribes with since gets one copy, and
// one copy is in the history once it was delivered (before, every offer
// again entered the history: 9 copies after 2 s).
func TestCallWaitingOnce(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)
		g := clients(t, c.chanServer)
		c.register(ann, ann, "sip:ann@desk", "", "3600")
		L := login(ann)
		body := invite("/call/once", "o1")
		id := c.send(bob, ann, body, "202 Accepted")
		// Let the retry loop offer it a few times (250 ms apart); no
		// assertion depends on how many.
		time.Sleep(time.Second)
		want := invitation(ann, bob, body)
		copies := func(frames []string) int {
			n := 0
			for _, f := range frames {
				if got, _ := withoutSeq(f); got == want {
					n++
				}
			}
			return n
		}
		a := c.dialAs(g, "$A", ann)
		a.send(msg("SUBSCRIBE", L, 1, `"since":0`))
		var seen []string
		for copies(seen) == 0 {
			seen = append(seen, a.next())
		}
		// Delivered: not offered again.
		c.expect(bob, "CANCEL", L+"/"+id, "", "409 Already Delivered")
		// A round trip: anything queued before it is read.
		a.call(msg("GET", "/"+uniq("probe-"), 3, ""))
		seen = append(seen, a.backlog...)
		a.backlog = nil
		if n := copies(seen); n != 1 {
			t.Errorf("the subscription with since got %d copies of the invitation, want 1: %q", n, seen)
		}
		// In the history once.
		a.send(msg("SUBSCRIBE", L, 2, `"since":0`))
		var replay []string
		for {
			f := a.next()
			if field(f, "msg_id") == "2" {
				break
			}
			replay = append(replay, f)
		}
		if n := copies(replay); n != 1 {
			t.Errorf("the replay of %s holds %d copies of the invitation, want 1: %q", L, n, replay)
		}
		a.quiet()
	})
}

// TestCallWaitingBounded: invitations waiting for one user are bounded in
// bytes (-call-wait-bytes, 1 MiB by default): of 8 SENDs of 500 KB to
// oneself, two wait and the others answer 503 Waiting Messages Too Large
// (before, each one waited and every offer again entered the history:
// 636 MB of RSS). The two are delivered when a session follows, freeing
// the room; another user has room of its own. -call-wait-count and
// -call-wait-bytes set the bounds.
func TestCallWaitingBounded(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		// The two messages must still wait after the 8 SENDs, which may
		// take more than the default 30 s under -race on a loaded machine.
		c := startCall(t, m, flagCallWait, "10m")
		c.register(ann, ann, "sip:ann@desk", "", "3600")
		c.register(cat, cat, "sip:cat@desk", "", "3600")
		big := func(i int) string {
			return `{"command":"invite","url":"/call/big","id":"b` + itoa(i) + `","pad":"` + strings.Repeat("x", 500<<10) + `"}`
		}
		var ids []string
		for i := range 8 {
			r := c.req(ann, "SEND", login(ann), big(i))
			switch {
			case r.StatusLine == "HTTP/1.1 202 Accepted" && i < 2:
				ids = append(ids, parseObjID(t, r.Body))
			case r.StatusLine == "HTTP/1.1 503 Waiting Messages Too Large" && i >= 2:
			default:
				t.Fatalf("SEND %d of 500 KB: %s", i, r.StatusLine)
			}
		}
		c.send(ann, cat, big(99), "202 Accepted")
		// A session follows: both are delivered, once each.
		a := c.dialAs(clients(t, c.chanServer), "$A", ann)
		a.send(msg("SUBSCRIBE", login(ann), 1, ""))
		got := map[string]int{}
		for got[invitation(ann, ann, big(0))] == 0 || got[invitation(ann, ann, big(1))] == 0 {
			f, _ := withoutSeq(a.next())
			got[f]++
		}
		for _, id := range ids {
			c.expect(ann, "CANCEL", login(ann)+"/"+id, "", "409 Already Delivered")
		}
		// The room is free again; the session takes the next one at once.
		c.send(ann, ann, big(100), "200 OK")
	})
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m, flagCallWaitCount, "2", flagCallWaitBytes, "300")
		c.register(ann, ann, "sip:ann@desk", "", "3600")
		c.register(cat, cat, "sip:cat@desk", "", "3600")
		c.send(bob, ann, invite("/call/1", "i1"), "202 Accepted")
		c.send(bob, ann, invite("/call/2", "i2"), "202 Accepted")
		c.send(bob, ann, invite("/call/3", "i3"), "503 Too Many Waiting Messages")
		c.send(bob, cat, `{"command":"invite","pad":"`+strings.Repeat("x", 200)+`"}`, "202 Accepted")
		c.send(bob, cat, `{"command":"invite","pad":"`+strings.Repeat("x", 200)+`"}`, "503 Waiting Messages Too Large")
	})
}

// TestCallExpiresWhole: expires is a whole number of seconds however the
// JSON number is written (2.0, 1e1); a fraction or a number below 1
// answers 400 Invalid Expires; a value past -call-max-expires is lowered
// to it, and the answer says what was granted.
func TestCallExpiresWhole(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		c := startCall(t, m)
		for _, e := range []struct{ sent, granted string }{
			{"2.0", "2"}, {"1e1", "10"}, {"1E+1", "10"}, {"60.000", "60"}, {"0.5e1", "5"},
			{"86400", "86400"}, {"86401", "86400"}, {"1e30", "86400"}, {"9.3e18", "86400"},
		} {
			c.register(ann, ann, "sip:ann@"+e.sent, e.sent, e.granted)
		}
		for _, e := range []string{"1.5", "0.0", "0", "-1e1", "1e-1", `"60"`, "true", "null"} {
			c.expect(ann, "POST", login(ann), `{"contact":"sip:ann@x","expires":`+e+`}`, "400 Invalid Expires")
		}
	})
}

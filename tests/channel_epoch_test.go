package tests

import (
	"path/filepath"
	"strconv"
	"testing"
)

// TestChannelEpoch: the history of a server has an epoch
// (docs/channel.md#replay-after-a-reconnect), kept in its state: the same
// after a restart on the same state directory, another one after a
// restart on a new state directory, whose seqs start again from 1. Once
// the new server has handed out more seqs than the old one, a SUBSCRIBE
// with the old epoch and a since answers recovered false with the new
// epoch and replays nothing, while a bare since (no epoch) resumes as
// before and one beyond the seq does not. The GET kept open writes ids
// "<epoch>:<seq>"; a Last-Event-ID of the old epoch gets the state first,
// one of the new epoch and a bare seq resume without it, and a malformed
// one answers 400 Invalid Last-Event-ID (issue 27, defect 4).
func TestChannelEpoch(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		cs := startChannel(t, m)
		g := clients(t, cs)
		p := "/" + uniq("epoch-")
		P := jsonString(p)
		subscribe := func(c *wsClient, extra string) (reply, epoch string) {
			t.Helper()
			reply, epoch = withoutEpoch(c.call(`{"method":"SUBSCRIBE","resource":` + P + extra + `,"msg_id":"sub"}`))
			if epoch == "" {
				t.Fatalf("SUBSCRIBE%s: %s: no epoch as its last field", extra, reply)
			}
			return reply, epoch
		}
		// put changes p n times and returns the seq of the last change.
		put := func(c *wsClient, n int) uint64 {
			t.Helper()
			var last uint64
			for i := range n {
				c.call(`{"method":"PUT","resource":` + P + `,"entity":` + strconv.Itoa(i) + `,"persistent":true,"msg_id":"put"}`)
				f := c.next()
				if _, seq := withoutSeq(f); field(f, "notify") != `"PUT"` || seq <= last {
					t.Fatalf("notification of PUT %d: %s (after seq %d)", i, f, last)
				} else {
					last = seq
				}
			}
			return last
		}

		a := g.dial("$A")
		if r, _ := subscribe(a, ""); r != `{"msg_id":"sub","code":"success","epoch":"E"}` {
			t.Fatalf("SUBSCRIBE: %s", r)
		}
		_, old := subscribe(a, "")
		oldSeq := put(a, 3)

		// The same state directory keeps the epoch, and a since at the last
		// seq before a clean restart resumes (the history itself is lost).
		cs.restart()
		b := g.dial("$B")
		since := `,"since":` + strconv.FormatUint(oldSeq, 10)
		if r, e := subscribe(b, since+`,"epoch":"`+old+`"`); r != `{"msg_id":"sub","code":"success","recovered":true,"epoch":"E"}` || e != old {
			t.Errorf("after a restart on the same state: %s, epoch %s, want %s", r, e, old)
		}
		b.quiet()

		// A new state directory: a new history.
		cs.server.stop()
		db := filepath.Join(t.TempDir(), "reso.db")
		cs.args = append([]string{"-db", db}, cs.args[2:]...)
		cs.DB = db
		cs.launch()
		c := g.dial("$C")
		_, fresh := subscribe(c, "")
		if fresh == old {
			t.Fatalf("a new state directory kept the epoch %s", old)
		}
		n := int(oldSeq) + 3
		newSeq := put(c, n) // past the old seqs: since would be in range
		if newSeq <= oldSeq+1 {
			t.Fatalf("seq %d on the new state, %d on the old", newSeq, oldSeq)
		}
		d := g.dial("$D")
		sinceOld := `,"since":` + strconv.FormatUint(oldSeq, 10)
		if r, e := subscribe(d, sinceOld+`,"epoch":"`+old+`"`); r != `{"msg_id":"sub","code":"success","recovered":false,"epoch":"E"}` || e != fresh {
			t.Errorf("SUBSCRIBE with the old epoch: %s, epoch %s, want %s", r, e, fresh)
		}
		d.quiet() // nothing replayed
		e := g.dial("$E")
		if r, ep := subscribe(e, sinceOld); r != `{"msg_id":"sub","code":"success","recovered":true,"epoch":"E"}` || ep != fresh {
			t.Errorf("SUBSCRIBE with a bare since: %s, epoch %s", r, ep)
		}
		for range newSeq - oldSeq {
			if f := e.next(); field(f, "notify") != `"PUT"` {
				t.Fatalf("replayed with a bare since: %s", f)
			}
		}
		e.quiet()
		f := g.dial("$F")
		beyond := `,"since":` + strconv.FormatUint(newSeq+1000, 10) + `,"epoch":"` + fresh + `"`
		if r, _ := subscribe(f, beyond); r != `{"msg_id":"sub","code":"success","recovered":false,"epoch":"E"}` {
			t.Errorf("SUBSCRIBE with a since beyond the seq: %s", r)
		}
		f.quiet()

		// The GET kept open: ids "<epoch>:<seq>"; Last-Event-ID of the old
		// epoch gets the state first, of this one or bare resumes.
		state := `{"resource":` + P + `,"type":"application/json","entity":` + strconv.Itoa(n-1) + `}`
		oldID := old + ":" + strconv.FormatUint(oldSeq, 10)
		fromOld := cs.openStream("/channel"+p, "Accept: text/event-stream", "Last-Event-ID: "+oldID)
		if fromOld.Resp.StatusLine != "HTTP/1.1 200 OK" {
			t.Fatalf("Last-Event-ID %s: %s", oldID, fromOld.Resp.StatusLine)
		}
		if ev := fromOld.event(); ev.Data != state || ev.HasID {
			t.Errorf("Last-Event-ID of the old epoch: first event %+v, want the state %s without id", ev, state)
		}
		newID := fresh + ":" + strconv.FormatUint(newSeq-1, 10)
		resumed := cs.openStream("/channel"+p, "Accept: text/event-stream", "Last-Event-ID: "+newID)
		bare := cs.openStream("/channel"+p, "Accept: text/event-stream", "Last-Event-ID: "+strconv.FormatUint(newSeq-1, 10))
		for _, s := range []*stream{resumed, bare} {
			if s.Resp.StatusLine != "HTTP/1.1 200 OK" {
				t.Fatalf("resume: %s", s.Resp.StatusLine)
			}
		}
		last := put(c, 1)
		wantID := fresh + ":" + strconv.FormatUint(last, 10)
		for name, s := range map[string]*stream{"old epoch": fromOld, "this epoch": resumed, "bare seq": bare} {
			if name != "old epoch" {
				// Resumed: first the change after Last-Event-ID, no state.
				if ev := s.event(); ev.ID != fresh+":"+strconv.FormatUint(newSeq, 10) || field(ev.Data, "entity") != strconv.Itoa(n-1) {
					t.Errorf("%s: first event %+v, want the notification of seq %d", name, ev, newSeq)
				}
			}
			if ev := s.event(); !ev.HasID || ev.ID != wantID || field(ev.Data, "entity") != "0" {
				t.Errorf("%s: event %+v, want id %s", name, ev, wantID)
			}
		}
		for _, bad := range []string{old + ":", ":" + strconv.FormatUint(oldSeq, 10), "ABC:1", "a-b:1", "x:y:1", old + ":-1", "1.5", "x"} {
			r := cs.httpJSON("GET", "/channel"+p, "", "Accept: text/event-stream", "Last-Event-ID: "+bad)
			if r.StatusLine != "HTTP/1.1 400 Invalid Last-Event-ID" {
				t.Errorf("Last-Event-ID %q: %s", bad, r.StatusLine)
			}
		}
	})
}

package tests

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	_ "modernc.org/sqlite" // to hold the -db file's write lock, as another process would
)

// lockDB opens a second connection to the SQLite database at path and
// takes its write lock, as another process holding it would; the
// returned function releases it.
func lockDB(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("taking the write lock of %s: %v", path, err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			conn.ExecContext(context.Background(), "ROLLBACK")
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// TestChannelStoreFails: with another connection holding the -db write
// lock, a persistent PUT and a persistent POST answer "store failed" and
// are seen by nobody: not by a reader, a listing, a subscriber or a
// replay, not after the lock is released and not after a restart; seq
// goes on as if they had never come (issue 19).
func TestChannelStoreFails(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		cs := startChannel(t, m)
		g := clients(t, cs)
		a, a2, b, s := g.dial("$A"), g.dial("$A2"), g.dial("$B"), g.dial("$S")
		root := "/" + uniq("stall-")
		R, L := jsonString(root+"/r"), jsonString(root+"/l")
		for _, msg := range []string{
			`{"method":"PUT","resource":` + R + `,"entity":{"v":"before"},"persistent":true,"msg_id":1}`,
			`{"method":"PUT","resource":` + jsonString(root+"/l/k") + `,"entity":1,"persistent":true,"msg_id":1}`,
			`{"method":"SUBSCRIBE","resource":` + R + `,"msg_id":1}`,
			`{"method":"SUBSCRIBE","resource":` + L + `,"msg_id":1}`,
		} {
			want := `{"msg_id":1,"code":"success"}`
			if strings.Contains(msg, "SUBSCRIBE") {
				want = `{"msg_id":1,"code":"success","epoch":"E"}`
			}
			if got := anyEpoch(s.call(msg)); got != want {
				t.Fatalf("%s: %s", msg, got)
			}
		}
		// The seq of the last change: a NOTIFY S sees.
		s.call(`{"method":"NOTIFY","resource":` + R + `,"data":0,"msg_id":2}`)
		last := s.expect(`{"notify":"NOTIFY","resource":` + R + `,"data":0,"from":$S,"seq":N}`)[0]

		release := lockDB(t, cs.DB)
		a.send(`{"method":"PUT","resource":` + R + `,"entity":{"v":"during"},"persistent":true,"msg_id":3}`)
		a2.send(`{"method":"POST","resource":` + L + `,"id":"x","persistent":true,"msg_id":3}`)
		reads := []struct{ msg, want string }{
			{`{"method":"GET","resource":` + R + `,"msg_id":4}`, `{"msg_id":4,"code":"success","resource":` + R + `,"type":"application/json","entity":{"v":"before"}}`},
			{`{"method":"GET","resource":` + L + `,"msg_id":4}`, `{"msg_id":4,"code":"success","resource":` + L + `,"type":"application/json","entity":["k"]}`},
		}
		for _, r := range reads { // while the store is stalled
			if got := b.call(r.msg); got != r.want {
				t.Errorf("during: %s: %s, want %s", r.msg, got, r.want)
			}
		}
		for _, c := range []*wsClient{a, a2} {
			if got := c.next(); got != `{"msg_id":3,"code":"failed","reason":"store failed"}` {
				t.Errorf("%s: %s", c.label, got)
			}
		}
		for _, r := range reads { // after the failure, the lock still held
			if got := b.call(r.msg); got != r.want {
				t.Errorf("after the failure: %s: %s, want %s", r.msg, got, r.want)
			}
		}
		for _, p := range []string{R, L} {
			got := anyEpoch(b.call(`{"method":"SUBSCRIBE","resource":` + p + `,"since":` + strconv.FormatUint(last, 10) + `,"msg_id":5}`))
			if got != `{"msg_id":5,"code":"success","recovered":true,"epoch":"E"}` {
				t.Errorf("replay of %s: %s", p, got)
			}
		}
		b.quiet() // no replayed notification
		s.quiet() // no notification
		release()
		for _, r := range reads {
			if got := b.call(r.msg); got != r.want {
				t.Errorf("after the release: %s: %s, want %s", r.msg, got, r.want)
			}
		}
		// The next change takes the next seq, as if the failed ones never came.
		if got := a.call(`{"method":"PUT","resource":` + R + `,"entity":{"v":"after"},"persistent":true,"msg_id":6}`); got != `{"msg_id":6,"code":"success"}` {
			t.Fatalf("after the release: %s", got)
		}
		_, seq := withoutSeq(s.next())
		if seq != last+1 {
			t.Errorf("seq %d after the failed changes, want %d", seq, last+1)
		}

		cs.restart()
		g = clients(t, cs)
		c := g.dial("$C")
		for _, r := range []struct{ msg, want string }{
			{`{"method":"GET","resource":` + R + `,"msg_id":7}`, `{"msg_id":7,"code":"success","resource":` + R + `,"type":"application/json","entity":{"v":"after"}}`},
			{`{"method":"GET","resource":` + L + `,"msg_id":7}`, `{"msg_id":7,"code":"success","resource":` + L + `,"type":"application/json","entity":["k"]}`},
		} {
			if got := c.call(r.msg); got != r.want {
				t.Errorf("after a restart: %s: %s, want %s", r.msg, got, r.want)
			}
		}
	})
}

// TestChannelSeqAfterKill: with the -db write lock held by another
// connection, 70,000 NOTIFYs; then kill -9 and a restart. No seq handed
// out after the restart repeats one a subscriber saw before it: seqs stop
// where the store's mark is rather than pass it (issue 19).
func TestChannelSeqAfterKill(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		cs := startChannel(t, m, "-channel-queue", "200000", "-channel-queue-bytes", "67108864")
		g := clients(t, cs)
		s, n := g.dial("$S"), g.dial("$N")
		p := jsonString("/" + uniq("seq-"))
		if got := anyEpoch(s.call(`{"method":"SUBSCRIBE","resource":` + p + `,"msg_id":1}`)); got != `{"msg_id":1,"code":"success","epoch":"E"}` {
			t.Fatal(got)
		}
		release := lockDB(t, cs.DB)
		const total = 70000
		go func() { // until the server stops reading, or the kill
			for i := range total {
				msg := fmt.Appendf(nil, `{"method":"NOTIFY","resource":%s,"data":%d}`, p, i)
				if n.conn.Write(n.ctx, websocket.MessageText, msg) != nil {
					return
				}
			}
		}()
		var last uint64
		for seen := 0; seen < total; seen++ {
			var f string
			select {
			case f = <-s.frames:
			case <-time.After(3 * time.Second): // the NOTIFYs wait for the store
			}
			if f == "" {
				break
			}
			_, seq := withoutSeq(f)
			if seq <= last {
				t.Fatalf("seq %d after %d", seq, last)
			}
			last = seq
		}
		t.Logf("last seq seen before the kill: %d", last)
		cs.server.kill()
		release()
		cs.launch()
		g = clients(t, cs)
		c := g.dial("$C")
		c.call(`{"method":"SUBSCRIBE","resource":` + p + `,"since":` + strconv.FormatUint(last, 10) + `,"msg_id":2}`)
		c.call(`{"method":"NOTIFY","resource":` + p + `,"data":"after","msg_id":3}`)
		if len(c.backlog) == 0 {
			t.Fatal("after the restart: no notification of the NOTIFY")
		}
		f := c.backlog[len(c.backlog)-1]
		if _, seq := withoutSeq(f); seq <= last || !strings.Contains(f, `"data":"after"`) {
			t.Errorf("after the restart: %s; seen before: %d", f, last)
		}
	})
}

// TestChannelHistoryBytes: -channel-history-bytes bounds the bytes of the
// notifications kept for replay; a SUBSCRIBE with a since before what it
// holds answers recovered false, one within it replays (issue 19).
func TestChannelHistoryBytes(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		cs := startChannel(t, m, "-channel-history-bytes", "5000")
		g := clients(t, cs)
		s, c := g.dial("$S"), g.dial("$C")
		p := jsonString("/" + uniq("hist-"))
		s.call(`{"method":"SUBSCRIBE","resource":` + p + `,"msg_id":1}`)
		data := jsonString(strings.Repeat("x", 1000))
		var seqs []uint64
		for range 10 { // about 1,100 bytes each: the history keeps the last 4
			s.send(`{"method":"NOTIFY","resource":` + p + `,"data":` + data + `}`)
			seqs = append(seqs, s.expect(`{"notify":"NOTIFY","resource":`+p+`,"data":`+data+`,"from":$S,"seq":N}`)...)
		}
		if got := anyEpoch(c.call(`{"method":"SUBSCRIBE","resource":` + p + `,"since":` + strconv.FormatUint(seqs[0], 10) + `,"msg_id":2}`)); got != `{"msg_id":2,"code":"success","recovered":false,"epoch":"E"}` {
			t.Errorf("since the first: %s", got)
		}
		c.quiet()
		if got := anyEpoch(c.call(`{"method":"SUBSCRIBE","resource":` + p + `,"since":` + strconv.FormatUint(seqs[7], 10) + `,"msg_id":3}`)); got != `{"msg_id":3,"code":"success","recovered":true,"epoch":"E"}` {
			t.Errorf("since the eighth: %s", got)
		}
		c.expect(`{"notify":"NOTIFY","resource":`+p+`,"data":`+data+`,"from":$S,"seq":N}`, `{"notify":"NOTIFY","resource":`+p+`,"data":`+data+`,"from":$S,"seq":N}`)
	})
}

// TestChannelReadLimitFlag: -channel-read-limit sets the largest message
// in both plugin modes: a message between the default 64 KiB and the
// limit is read, one past the limit closes with 1009 (issue 19).
func TestChannelReadLimitFlag(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		const limit = 256 << 10
		cs := startChannel(t, m, "-channel-read-limit", strconv.Itoa(limit))
		g := clients(t, cs)
		a := g.dial("$A")
		p := jsonString("/" + uniq("limit-"))
		sized := func(n int) string {
			head := `{"method":"PUT","resource":` + p + `,"msg_id":1,"entity":"`
			return head + strings.Repeat("x", n-len(head)-2) + `"}`
		}
		for _, n := range []int{200_000, limit} {
			if got := a.call(sized(n)); got != `{"msg_id":1,"code":"success"}` {
				t.Fatalf("a message of %d bytes: %s", n, describe(got))
			}
		}
		a.send(sized(limit + 1))
		if code, reason := a.closed(); code != closeTooBig {
			t.Errorf("a message of %d bytes: close %d %q, want %d", limit+1, code, reason, closeTooBig)
		}
	})
}

// TestChannelDBSyncFull: with -db-sync full (SQLite's synchronous=FULL,
// docs/channel.md) reso starts, stores persistent writes, and has them
// after kill -9 and a restart, as with the default (issue 35). What FULL
// adds, keeping the last commits through a power loss, no test here can
// cut; app's TestDBSyncFlag checks the setting reaches the store.
func TestChannelDBSyncFull(t *testing.T) {
	t.Parallel()
	cs := startChannel(t, allModes[0], "-db-sync", "full")
	root := "/" + uniq("sync-")
	R := jsonString(root)
	a := clients(t, cs).dial("$A")
	if got := a.call(`{"method":"PUT","resource":"` + root + `/k","entity":2,"persistent":true,"msg_id":1}`); !strings.Contains(got, `"code":"success"`) {
		t.Fatalf("PUT: %s", got)
	}
	cs.server.kill()
	cs.launch()
	b := clients(t, cs).dial("$B")
	want := `{"msg_id":2,"code":"success","resource":` + R + `,"type":"application/json","entity":["k"]}`
	if got := b.call(`{"method":"GET","resource":` + R + `,"msg_id":2}`); got != want {
		t.Fatalf("after kill -9 and a restart: %s, want %s", got, want)
	}
}

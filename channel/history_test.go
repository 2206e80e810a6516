package channel

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable clock for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestHistoryBounds checks that replay reports recovered:false once the
// history no longer reaches back to since, by count and by age.
func TestHistoryBounds(t *testing.T) {
	clk := &clock{t: time.Unix(1e9, 0)}
	tr := newTree(t, nil, Options{HistoryCount: 8, HistoryAge: time.Minute, Now: clk.now})
	ctx := context.Background()
	c := connect(t, tr, "c", "")
	for i := 0; i < 6; i++ { // seq 1..6, two notifications each: the history keeps 3..6
		c.Exec(ctx, fmt.Appendf(nil, `{"method":"PUT","resource":"/h","entity":%d}`, i))
	}
	cases := []struct {
		since  uint64
		want   string
		frames int
	}{
		{1, `{"msg_id":1,"code":"success","recovered":false,"epoch":"e"}`, 0},
		{2, `{"msg_id":1,"code":"success","recovered":true,"epoch":"e"}`, 4},
		{5, `{"msg_id":1,"code":"success","recovered":true,"epoch":"e"}`, 1},
		{6, `{"msg_id":1,"code":"success","recovered":true,"epoch":"e"}`, 0},
		{7, `{"msg_id":1,"code":"success","recovered":false,"epoch":"e"}`, 0},
	}
	for _, tc := range cases {
		c.Exec(ctx, fmt.Appendf(nil, `{"method":"SUBSCRIBE","resource":"/h","since":%d,"msg_id":1}`, tc.since))
		got := drain(t, c)
		if len(got) != tc.frames+1 || got[len(got)-1] != tc.want {
			t.Errorf("since %d: %q", tc.since, got)
		}
	}
	clk.add(2 * time.Minute)
	c.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/h","since":5,"msg_id":1}`))
	if got := drain(t, c); len(got) != 1 || got[0] != `{"msg_id":1,"code":"success","recovered":false,"epoch":"e"}` {
		t.Errorf("after the age: %q", got)
	}
}

// TestReplayBeyondQueue: a replay is bounded by the history and by the
// queue's bytes, not by its count of frames. 10,000 notifications missed
// come back exactly once, in order, before the reply; a notification that
// arrives before the client takes them does not make it a slow consumer;
// a replay larger than the queue's bytes answers recovered false.
func TestReplayBeyondQueue(t *testing.T) {
	ctx := context.Background()
	tr := newTree(t, nil, Options{QueueFrames: 64})
	pub := connect(t, tr, "pub", "")
	const n = 10_000
	for i := range n {
		pub.Exec(ctx, []byte(`{"method":"NOTIFY","resource":"/burst","data":`+strconv.Itoa(i)+`}`))
	}
	c := connect(t, tr, "c", "")
	c.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/burst","since":0,"msg_id":1}`))
	pub.Exec(ctx, []byte(`{"method":"NOTIFY","resource":"/burst","data":"after"}`))
	got := drain(t, c)
	if len(got) != n+2 {
		t.Fatalf("%d frames, want %d replayed, the reply and one more", len(got), n)
	}
	for i := range n {
		want := `{"notify":"NOTIFY","resource":"/burst","data":` + strconv.Itoa(i) + `,"from":"pub","seq":` + strconv.Itoa(i+1) + `}`
		if got[i] != want {
			t.Fatalf("frame %d: %s, want %s", i, got[i], want)
		}
	}
	if got[n] != `{"msg_id":1,"code":"success","recovered":true,"epoch":"e"}` {
		t.Errorf("reply %s", got[n])
	}
	if !strings.Contains(got[n+1], `"data":"after"`) {
		t.Errorf("after the replay: %s", got[n+1])
	}

	small := newTree(t, nil, Options{QueueBytes: 4096})
	pub = connect(t, small, "pub", "")
	for i := range 200 {
		pub.Exec(ctx, []byte(`{"method":"NOTIFY","resource":"/burst","data":`+strconv.Itoa(i)+`}`))
	}
	c = connect(t, small, "c", "")
	c.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/burst","since":0,"msg_id":1}`))
	if got := drain(t, c); len(got) != 1 || got[0] != `{"msg_id":1,"code":"success","recovered":false,"epoch":"e"}` {
		t.Errorf("replay past the queue's bytes: %q", got)
	}
}

// TestHistoryBytes: the history holds at most HistoryBytes of
// notifications; a replay from before what it holds, or of a
// notification larger than the bound, answers recovered false.
func TestHistoryBytes(t *testing.T) {
	tr := newTree(t, nil, Options{HistoryBytes: 1000})
	ctx := context.Background()
	c := connect(t, tr, "c", "")
	big := `"` + strings.Repeat("x", 300) + `"`
	for range 5 { // seq 1..5, about 360 bytes each: the history keeps 4 and 5
		c.Exec(ctx, []byte(`{"method":"NOTIFY","resource":"/h","data":`+big+`}`))
	}
	drain(t, c)
	for _, tc := range []struct {
		since  uint64
		want   string
		frames int
	}{
		{2, `{"msg_id":1,"code":"success","recovered":false,"epoch":"e"}`, 0},
		{3, `{"msg_id":1,"code":"success","recovered":true,"epoch":"e"}`, 2},
		{4, `{"msg_id":1,"code":"success","recovered":true,"epoch":"e"}`, 1},
	} {
		c.Exec(ctx, fmt.Appendf(nil, `{"method":"SUBSCRIBE","resource":"/h","since":%d,"msg_id":1}`, tc.since))
		got := drain(t, c)
		if len(got) != tc.frames+1 || got[len(got)-1] != tc.want {
			t.Errorf("since %d: %q", tc.since, got)
		}
	}
	c.Exec(ctx, []byte(`{"method":"NOTIFY","resource":"/h","data":"`+strings.Repeat("y", 1000)+`"}`))
	drain(t, c)
	c.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/h","since":5,"msg_id":1}`))
	if got := drain(t, c); len(got) != 1 || got[0] != `{"msg_id":1,"code":"success","recovered":false,"epoch":"e"}` {
		t.Errorf("after a notification past the bound: %q", got)
	}
}

// TestReplayUnheard: the notifications of changes that nobody received
// when they were made are kept as what encodes them (emitChange) and
// encoded by the replay: byte for byte what subscribers received live in
// a tree that makes the same changes while they listen. The changes give
// escapes (a type, a from and a name that need them), private fields, a
// merge, a field, a POST, a DELETE, and a resource left without entity.
func TestReplayUnheard(t *testing.T) {
	ctx := context.Background()
	writes := []string{
		`{"method":"PUT","resource":"/r/x","entity":{"n":1,"_secret":2}}`,
		`{"method":"PUT","resource":"/r/x","type":"text/\"q\"\u2028","entity":"caf\u00e9"}`,
		`{"method":"PUT","resource":"/r/y","partial":true,"entity":{"a":1}}`,
		`{"method":"PUT","resource":"/r/y","partial":true,"entity":{"b":{"_p":1,"c":[1]}}}`,
		`{"method":"PUT","resource":"/r/y[z]","entity":null}`,
		`{"method":"POST","resource":"/r","id":"p\u00e9","entity":[1,2]}`,
		`{"method":"PUT","resource":"/r/x/k","entity":1}`,
		`{"method":"DELETE","resource":"/r/x"}`,
		`{"method":"DELETE","resource":"/r/y"}`,
		`{"method":"PUT","resource":"/r/x","entity":{}}`,
	}
	paths := []string{"/r", "/r/x", "/r/y", "/r/x/k", "/r/p\u00e9"}
	subscribe := func(c *Client, p, since string) {
		c.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"`+p+`"`+since+`,"msg_id":1}`))
	}
	live := newTree(t, nil, Options{})
	var listeners []*Client
	for i, p := range paths {
		c := connect(t, live, "l"+strconv.Itoa(i), "")
		subscribe(c, p, "")
		drain(t, c)
		listeners = append(listeners, c)
	}
	unheard := newTree(t, nil, Options{})
	lw, uw := connect(t, live, "w\"1\n", ""), connect(t, unheard, "w\"1\n", "")
	for _, w := range writes {
		lw.Exec(ctx, []byte(w))
		uw.Exec(ctx, []byte(w))
	}
	if got, want := drain(t, uw), drain(t, lw); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("replies differ:\n%q\n%q", got, want)
	}
	var heard, replayed []string
	for i, p := range paths {
		heard = append(heard, drain(t, listeners[i])...)
		c := connect(t, unheard, "r"+strconv.Itoa(i), "")
		subscribe(c, p, `,"since":0`)
		got := drain(t, c)
		if len(got) == 0 || !strings.Contains(got[len(got)-1], `"recovered":true`) {
			t.Fatalf("%s: %q", p, got)
		}
		replayed = append(replayed, got[:len(got)-1]...)
	}
	if len(heard) < 2*len(writes)-4 {
		t.Fatalf("only %d notifications heard: %q", len(heard), heard)
	}
	if strings.Join(replayed, "\n") != strings.Join(heard, "\n") {
		t.Errorf("replayed:\n%s\nheard live:\n%s", strings.Join(replayed, "\n"), strings.Join(heard, "\n"))
	}
	for _, n := range heard {
		if strings.Contains(n, "_secret") || strings.Contains(n, `"_p"`) {
			t.Errorf("a private field in %s", n)
		}
	}
}

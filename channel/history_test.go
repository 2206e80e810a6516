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

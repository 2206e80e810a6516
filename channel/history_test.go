package channel

import (
	"context"
	"fmt"
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
		{1, `{"msg_id":1,"code":"success","recovered":false}`, 0},
		{2, `{"msg_id":1,"code":"success","recovered":true}`, 4},
		{5, `{"msg_id":1,"code":"success","recovered":true}`, 1},
		{6, `{"msg_id":1,"code":"success","recovered":true}`, 0},
		{7, `{"msg_id":1,"code":"success","recovered":false}`, 0},
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
	if got := drain(t, c); len(got) != 1 || got[0] != `{"msg_id":1,"code":"success","recovered":false}` {
		t.Errorf("after the age: %q", got)
	}
}

package channel

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// frameStrings returns fs as strings.
func frameStrings(fs []Frame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Data))
	}
	return out
}

// TestTryNext checks that TryNext returns what is queued without waiting,
// nothing while the client lives, and the *Gone error once it has ended,
// after its last frames.
func TestTryNext(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opt    Options
		pushes int
		end    func(c *Client)
		want   int   // frames of the first TryNext
		gone   error // error of the TryNext after it
	}{
		{"empty", Options{}, 0, nil, 0, nil},
		{"queued", Options{}, 3, nil, 3, nil},
		{"disconnected empty", Options{}, 0, (*Client).Disconnect, 0, &Gone{Code: 1000, Reason: "disconnected"}},
		{"disconnected with frames", Options{}, 2, (*Client).Disconnect, 2, &Gone{Code: 1000, Reason: "disconnected"}},
		{"slow consumer", Options{QueueFrames: 2}, 5, nil, 2, ErrSlowConsumer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t, nil, tc.opt)
			c := connect(t, tr, "c", "")
			for i := range tc.pushes {
				c.push(Frame{Data: []byte(fmt.Sprint(i))})
			}
			if tc.end != nil {
				tc.end(c)
			}
			buf := make([]Frame, 1, 8)
			fs, err := c.TryNext(buf)
			if tc.want == 0 && err == nil {
				if len(fs) != 0 {
					t.Fatalf("got %q from an empty queue", frameStrings(fs))
				}
				return
			}
			if tc.want > 0 {
				if err != nil || len(fs) != tc.want {
					t.Fatalf("got %q, %v; want %d frames", frameStrings(fs), err, tc.want)
				}
				for i, f := range fs {
					if string(f.Data) != fmt.Sprint(i) {
						t.Fatalf("frame %d is %s", i, f.Data)
					}
				}
				fs, err = c.TryNext(fs)
			}
			if len(fs) != 0 || !sameGone(err, tc.gone) {
				t.Fatalf("then %q, %v; want %v", frameStrings(fs), err, tc.gone)
			}
			if fs, err := c.TryNext(nil); len(fs) != 0 || !sameGone(err, tc.gone) {
				t.Fatalf("again %q, %v; want %v", frameStrings(fs), err, tc.gone)
			}
		})
	}
}

// sameGone reports whether err is the Gone want.
func sameGone(err, want error) bool {
	if want == nil {
		return err == nil
	}
	var g, w *Gone
	return errors.As(err, &g) && errors.As(want, &w) && *g == *w
}

// TestOnReady checks when the function set by OnReady is called: at once
// when frames are queued or the client ended, when the first frame is
// queued, and when the client ends.
func TestOnReady(t *testing.T) {
	tr := newTree(t, nil, Options{})
	c := connect(t, tr, "c", "")
	var calls atomic.Int32
	c.OnReady(func() { calls.Add(1) })
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d calls with nothing queued", n)
	}
	c.push(Frame{Data: []byte("a")})
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d calls after the first frame", n)
	}
	c.push(Frame{Data: []byte("b")})
	var again atomic.Int32
	c.OnReady(func() { again.Add(1) })
	if n := again.Load(); n != 1 {
		t.Fatalf("%d calls when set with frames queued", n)
	}
	if fs, err := c.TryNext(nil); err != nil || strings.Join(frameStrings(fs), "") != "ab" {
		t.Fatalf("TryNext: %q, %v", frameStrings(fs), err)
	}
	c.push(Frame{Data: []byte("c")})
	if n := again.Load(); n != 2 {
		t.Fatalf("%d calls after the queue emptied and filled", n)
	}
	c.TryNext(nil)
	c.Disconnect()
	if n := again.Load(); n < 3 {
		t.Fatalf("%d calls after Disconnect", n)
	}
	if calls.Load() != 1 {
		t.Fatalf("the replaced function was called")
	}
	var late atomic.Int32
	c.OnReady(func() { late.Add(1) })
	if n := late.Load(); n != 1 {
		t.Fatalf("%d calls when set on an ended client", n)
	}
	c.OnReady(nil)
	c.Disconnect()
}

// readyDrainer drains a client the way a door does with OnReady: a
// goroutine started on demand, at most one at a time.
type readyDrainer struct {
	c       *Client
	mu      sync.Mutex
	running bool
	pending bool
	wg      sync.WaitGroup

	got  []string // guarded by running
	gone error
}

func (d *readyDrainer) wake() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending = true
	if d.running {
		return
	}
	d.running = true
	d.wg.Add(1)
	go d.run()
}

func (d *readyDrainer) run() {
	defer d.wg.Done()
	var buf []Frame
	for {
		d.mu.Lock()
		if !d.pending {
			d.running = false
			d.mu.Unlock()
			return
		}
		d.pending = false
		d.mu.Unlock()
		for {
			var err error
			buf, err = d.c.TryNext(buf)
			d.got = append(d.got, frameStrings(buf)...)
			if err != nil {
				d.gone = err
			}
			if len(buf) == 0 {
				break
			}
		}
	}
}

// TestOnReadyStress pushes from many goroutines while a drainer started
// by OnReady drains with TryNext: every frame arrives once, each writer's
// in order, and the drainer sees the end.
func TestOnReadyStress(t *testing.T) {
	const writers, each = 8, 2000
	tr := newTree(t, nil, Options{QueueFrames: writers * each, QueueBytes: 1 << 30})
	c := connect(t, tr, "c", "")
	d := &readyDrainer{c: c}
	c.OnReady(d.wake)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if !c.push(Frame{Data: []byte(fmt.Sprintf("%d %d", w, i))}) {
					t.Errorf("push %d %d refused", w, i)
					return
				}
			}
		})
	}
	wg.Wait()
	c.Disconnect()
	// Disconnect woke the drainer before it returned, and nothing wakes
	// it after: wait until it saw the end.
	d.wg.Wait()
	if !sameGone(d.gone, &Gone{Code: 1000, Reason: "disconnected"}) {
		t.Errorf("drainer saw %v", d.gone)
	}
	if len(d.got) != writers*each {
		t.Fatalf("drained %d frames, want %d", len(d.got), writers*each)
	}
	next := make([]int, writers)
	for _, s := range d.got {
		var w, i int
		if _, err := fmt.Sscan(s, &w, &i); err != nil {
			t.Fatal(err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: frame %d, want %d", w, i, next[w])
		}
		next[w]++
	}
}

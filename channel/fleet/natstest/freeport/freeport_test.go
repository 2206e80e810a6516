package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestTake checks that the ports handed out are distinct, below the
// kernel's ephemeral range, never handed out twice by one process, and
// free: a listener can take each.
func TestTake(t *testing.T) {
	a, err := Take(20)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Take(20)
	if err != nil {
		t.Fatal(err)
	}
	low := ephemeralLow()
	seen := map[int]bool{}
	for _, p := range append(a, b...) {
		if seen[p] {
			t.Errorf("port %d handed out twice", p)
		}
		seen[p] = true
		if low-floor >= 1000 && (p < floor || p >= low) {
			t.Errorf("port %d outside [%d, %d)", p, floor, low)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		l.Close()
	}
}

// TestTakeSkipsTaken checks that a port a listener holds is not handed
// out: of a range whose even ports this test holds, only odd ones are
// handed out; of a range all held (by this test, or by whatever held a
// port of it already), none is.
func TestTakeSkipsTaken(t *testing.T) {
	hold := func(lo, hi, step int) map[int]bool {
		held := map[int]bool{}
		for p := lo; p < hi; p += step {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				continue // held already, by another process
			}
			t.Cleanup(func() { l.Close() })
			held[p] = true
		}
		return held
	}
	const lo = floor + 2000
	held := hold(lo, lo+40, 2)
	ports, err := take(5, lo, lo+40)
	if err != nil {
		t.Fatal(err)
	}
	// Handed out again by the next run of the test (-count).
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range ports {
			delete(handed, p)
		}
	})
	for _, p := range ports {
		if held[p] {
			t.Errorf("port %d is held by a listener and was handed out", p)
		}
	}
	hold(lo+100, lo+110, 1)
	if p, err := take(1, lo+100, lo+110); err == nil {
		t.Errorf("port %d handed out of a range all held", p[0])
	}
}

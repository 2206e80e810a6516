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
// out: in a range of 40 ports whose even ones are held, the 20 odd ones
// are handed out and nothing more.
func TestTakeSkipsTaken(t *testing.T) {
	const lo, hi = floor + 2000, floor + 2040
	taken := map[int]bool{}
	for p := lo; p < hi; p += 2 {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Skipf("port %d: %v", p, err)
		}
		defer l.Close()
		taken[p] = true
	}
	ports, err := take(20, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if taken[p] {
			t.Errorf("port %d is held by a listener and was handed out", p)
		}
	}
	if _, err := take(1, lo, hi); err == nil {
		t.Error("a 21st port was handed out of 20 free ones")
	}
}

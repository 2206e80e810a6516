// Package freeport hands out loopback TCP ports for programs whose
// configuration must name a port before the program listens on it: the
// routes of a NATS cluster, a balancer's upstreams.
//
// A port the kernel picked for a listener on port 0 and closed again is
// free only until something else takes it, and on a busy machine something
// does: every outgoing connection takes a port of the same (ephemeral)
// range. The ports handed out here lie below that range, where only a
// listener naming its port can take one, and one process never hands out
// the same port twice. Each is checked free (listened on and closed) when
// handed out.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// rangeFile holds the kernel's ephemeral range on Linux: "low\thigh".
const rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// floor is the lowest port handed out: above the well-known and most
// registered service ports.
const floor = 10000

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// Take returns n distinct loopback ports, free when Take returns.
func Take(n int) ([]int, error) {
	low := ephemeralLow()
	if low-floor < 1000 {
		// No room below the ephemeral range: the kernel's choice, with
		// its race.
		return fromKernel(n)
	}
	return take(n, floor, low)
}

// take returns n distinct ports of [lo, hi) not handed out before and
// free now.
func take(n, lo, hi int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 10*n+1000 {
			for _, p := range ports {
				delete(handed, p)
			}
			return nil, fmt.Errorf("freeport: no %d free ports found between %d and %d", n, lo, hi-1)
		}
		p := lo + rand.IntN(hi-lo)
		if handed[p] || !free(p) {
			continue
		}
		handed[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

// ephemeralLow returns the lowest port of the kernel's ephemeral range:
// Linux's setting, or its default where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return low
}

// free reports whether a loopback listener can take port p now.
func free(p int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	return l.Close() == nil
}

// fromKernel returns n ports the kernel picks for listeners on port 0.
func fromKernel(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(errors.New("freeport"), err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

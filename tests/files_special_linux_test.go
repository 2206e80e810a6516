package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFIFONotOpened: GET /file/fifo on a FIFO answers 404 Not Found at once
// (not a regular file, docs/wire.md#file-download) instead of waiting for a
// writer, a listing leaves it out and does not wait on it either, and many
// such requests leave the descriptors of the server and its plugin processes
// about where they were.
func TestFIFONotOpened(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m)
		if err := syscall.Mkfifo(filepath.Join(s.Dir, "fifo"), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		if err := os.Symlink("fifo", filepath.Join(s.Dir, "fifo-link")); err != nil {
			t.Fatal(err)
		}
		// Each request has the harness's deadline of 10 s: a request held
		// by the FIFO fails there instead of hanging the test.
		notFound(t, s.get(t, "/file/fifo"), "/file/fifo")
		notFound(t, s.get(t, "/file/fifo-link"), "/file/fifo-link")
		notFound(t, s.get(t, "/files/fifo"), "/files/fifo")
		check(t, s.get(t, "/files"), want{ok200, jsonCT, listingRoot})

		pid := s.cmd.Process.Pid
		before := descriptors(t, pid)
		const n = 200
		for i := range n {
			r := s.get(t, "/file/fifo")
			if r.StatusLine != "HTTP/1.1 404 Not Found" {
				t.Fatalf("request %d: %q", i, r.StatusLine)
			}
		}
		// A few descriptors may still be closing (the server's ends of the
		// connections): wait for the count to settle rather than time it.
		const slack = 20
		after := descriptors(t, pid)
		for try := 0; after > before+slack && try < 100; try++ {
			time.Sleep(50 * time.Millisecond)
			after = descriptors(t, pid)
		}
		if after > before+slack {
			t.Errorf("descriptors %d before %d requests, %d after", before, n, after)
		}
		// And the server still serves.
		check(t, s.get(t, "/file/hello.txt"), want{ok200, octCT, fixtureHello})
	})
}

// descriptors counts the open descriptors of process pid and of its
// descendants (the plugin processes), from /proc.
func descriptors(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	parent := map[int]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parent[p] = pp
		}
	}
	within := func(p int) bool {
		for ; p > 1; p = parent[p] {
			if p == pid {
				return true
			}
		}
		return false
	}
	total := 0
	for p := range parent {
		if !within(p) {
			continue
		}
		fds, err := os.ReadDir("/proc/" + strconv.Itoa(p) + "/fd")
		if err != nil {
			continue // ended since
		}
		total += len(fds)
	}
	if total == 0 {
		t.Fatalf("no descriptors found for %d", pid)
	}
	return total
}

// Package poll waits in tests for a condition to hold: it checks the
// condition again and again until it does or a bound runs out. The bound
// only keeps a broken test from hanging; it times nothing, so make it
// generous (the suite runs under -race, every package at once, on a
// shared machine).
package poll

import (
	"testing"
	"time"
)

// The pause between two checks starts at firstPause and doubles up to
// maxPause: a condition that holds soon is seen soon, and one that takes
// seconds (an HTTP request to a child process, say) is not checked in a
// busy loop.
const (
	firstPause = time.Millisecond
	maxPause   = 50 * time.Millisecond
)

// Wait calls cond until it returns true, and reports whether it did
// before bound passed. cond is called at least once, and once more after
// the bound passed, so that a condition that came true while the last
// pause ran is not missed.
func Wait(bound time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for pause := firstPause; ; pause = min(2*pause, maxPause) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}

// Until calls cond until it returns true; if bound passes first, it fails
// t at once, saying what was awaited ("waited 10s for " + what).
func Until(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Wait(bound, cond) {
		t.Fatalf("waited %v for %s", bound, what)
	}
}

// Within fails t if f has not returned after bound: a guard against a
// hang (a call that must not block), not a timing assertion, so make
// bound generous.
func Within(t testing.TB, bound time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("%s did not return within %v", what, bound)
	}
}

package poll

import (
	"testing"
	"time"
)

// TestWait: a condition that comes true on its third check is seen; one
// that never does is checked at least once and reported false once the
// bound passed.
func TestWait(t *testing.T) {
	calls := 0
	if !Wait(time.Minute, func() bool { calls++; return calls == 3 }) {
		t.Errorf("Wait of a condition true on the third check: false")
	}
	if calls != 3 {
		t.Errorf("checks: %d, want 3", calls)
	}
	calls = 0
	if Wait(0, func() bool { calls++; return false }) {
		t.Errorf("Wait of a condition never true: true")
	}
	if calls < 1 {
		t.Errorf("checks with a bound of 0: %d, want at least 1", calls)
	}
	Until(t, time.Minute, "a condition that holds", func() bool { return true })
}

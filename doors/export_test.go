package doors

import "time"

// IdleDrainers returns how many goroutines of the drain pool wait for
// work now, for tests that count goroutines.
func IdleDrainers() int { return max(int(drainPool.idle.Load()), 0) }

// IdleExecers returns how many goroutines of the exec pool wait for work
// now.
func IdleExecers() int { return max(int(execPool.idle.Load()), 0) }

// SetDrainIdleTimeout makes the drain pool's trims come every d instead
// of drainIdleTimeout, the one scheduled already included; the returned
// func restores the timeout.
func SetDrainIdleTimeout(d time.Duration) (restore func()) {
	tr := &drainPool.trim
	tr.mu.Lock()
	defer tr.mu.Unlock()
	old := tr.timeout
	tr.timeout = d
	if tr.timer != nil && tr.timer.Stop() {
		tr.timer = nil
		scheduleDrainTrimLocked()
	} // else the trim runs now, and schedules the next with d
	return func() {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		tr.timeout = old
	}
}

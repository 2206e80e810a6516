package doors

// IdleDrainers returns how many goroutines of the drain pool wait for
// work now, for tests that count goroutines.
func IdleDrainers() int { return max(int(drainPool.idle.Load()), 0) }

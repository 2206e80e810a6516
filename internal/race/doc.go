// Package race says whether the binary runs under the race detector, for
// tests that skip what the detector changes (allocations, the size of
// stacks, sync.Pool keeping items) and for test harnesses that build the
// programs they start with -race too.
package race

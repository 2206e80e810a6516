package doors

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// maxIdleDrainers is how many goroutines of the drain pool wait for work
// between bursts; one that finishes while that many wait returns. A
// fan-out wakes one drain per subscriber at once, so the pool keeps as
// many as a large room's burst takes: an idle goroutine holds its stack
// (a few KiB), and only as many exist as drains ran at once lately.
const maxIdleDrainers = 1024

// drainIdleTimeout is how long the drain pool's goroutines may all wait
// for work before some return: every drainIdleTimeout, as many return as
// waited through the whole of it. An idle goroutine so returns between
// one and two drainIdleTimeouts after its last drain, as net/http closes
// an idle connection: the pool keeps what a burst grew for the bursts
// that follow it (the messages of a conversation, a room's steady
// traffic), and an idle server goes back to the goroutines it started
// with.
const drainIdleTimeout = 15 * time.Second

// drainPool runs the drains of every session (see drainer) on goroutines
// shared by all sessions. A goroutine started for each drain grew a fresh
// stack on the way down to the network write every time (a fifth of the
// server's CPU at one NOTIFY to 1,000 subscribers in flight); the pool's
// goroutines keep theirs. Each drain handed to the pool has a goroutine
// of its own while it runs, as before: one waiting for a slow peer holds
// up no other session.
var drainPool struct {
	// jobs holds drains handed to goroutines that are idle, and nils
	// that make them return; idle counts the idle goroutines not yet
	// handed one, so that every job sent has a goroutine about to take
	// it.
	jobs chan *drainer
	idle atomic.Int32
	// low is the fewest idle goroutines seen since the last trim: that
	// many waited through the whole period. trimming is set while a trim
	// is scheduled (trim.timer is not nil).
	low      atomic.Int32
	trimming atomic.Bool
	trim     struct {
		mu      sync.Mutex
		timer   *time.Timer   // the next trim; nil when none is scheduled
		timeout time.Duration // when not 0, replaces drainIdleTimeout (for tests)
	}
}

func init() { drainPool.jobs = make(chan *drainer, maxIdleDrainers) }

// startDrain runs d.drain on an idle goroutine of the pool, or a new one.
func startDrain(d *drainer) {
	if n := drainPool.idle.Add(-1); n >= 0 {
		lowerDrainLow(n)
		drainPool.jobs <- d // never blocks: a goroutine was claimed
		return
	}
	drainPool.idle.Add(1)
	go drainWorker(d)
}

// drainWorker runs d, then the drains handed to it while it waits, until
// it finishes one while maxIdleDrainers wait, or a trim hands it nil.
func drainWorker(d *drainer) {
	for d != nil {
		d.drain()
		for {
			n := drainPool.idle.Load()
			if n >= maxIdleDrainers {
				return
			}
			if drainPool.idle.CompareAndSwap(n, n+1) {
				break
			}
		}
		if !drainPool.trimming.Load() {
			scheduleDrainTrim()
		}
		d = <-drainPool.jobs
	}
}

// lowerDrainLow records that n goroutines are idle.
func lowerDrainLow(n int32) {
	for {
		l := drainPool.low.Load()
		if n >= l || drainPool.low.CompareAndSwap(l, n) {
			return
		}
	}
}

// scheduleDrainTrim schedules a trim unless one is.
func scheduleDrainTrim() {
	tr := &drainPool.trim
	tr.mu.Lock()
	defer tr.mu.Unlock()
	scheduleDrainTrimLocked()
}

// scheduleDrainTrimLocked schedules a trim unless one is; the caller holds
// drainPool.trim.mu.
func scheduleDrainTrimLocked() {
	tr := &drainPool.trim
	if tr.timer != nil {
		return
	}
	timeout := tr.timeout
	if timeout <= 0 {
		timeout = drainIdleTimeout
	}
	tr.timer = time.AfterFunc(timeout, trimDrainPool)
	drainPool.trimming.Store(true)
}

// trimDrainPool makes as many idle goroutines return as stayed idle since
// the last trim, by claiming them as startDrain does and handing each a
// nil, and schedules the next trim while some are idle.
func trimDrainPool() {
	k := drainPool.low.Swap(math.MaxInt32) // a new period starts
	lowerDrainLow(max(drainPool.idle.Load(), 0))
	for ; k > 0; k-- {
		n := drainPool.idle.Load()
		if n <= 0 {
			break
		}
		if !drainPool.idle.CompareAndSwap(n, n-1) {
			k++ // try again
			continue
		}
		lowerDrainLow(n - 1)
		drainPool.jobs <- nil // never blocks: a goroutine was claimed
	}
	tr := &drainPool.trim
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.timer = nil
	drainPool.trimming.Store(false)
	// A goroutine that went idle while trimming was set did not schedule
	// the next trim: look at the count after clearing it.
	if drainPool.idle.Load() > 0 {
		scheduleDrainTrimLocked()
	}
}

package doors

import "sync/atomic"

// maxIdleDrainers is how many goroutines of the drain pool wait for work
// between bursts; one that finishes while that many wait returns. A
// fan-out wakes one drain per subscriber at once, so the pool keeps as
// many as a large room's burst takes: an idle goroutine holds its stack
// (a few KiB), and only as many exist as drains ever ran at once.
const maxIdleDrainers = 1024

// drainPool runs the drains of every session (see drainer) on goroutines
// shared by all sessions. A goroutine started for each drain grew a fresh
// stack on the way down to the network write every time (a fifth of the
// server's CPU at one NOTIFY to 1,000 subscribers in flight); the pool's
// goroutines keep theirs. Each drain handed to the pool has a goroutine
// of its own while it runs, as before: one waiting for a slow peer holds
// up no other session.
var drainPool struct {
	// jobs holds drains handed to goroutines that are idle; idle counts
	// the idle goroutines not yet handed one, so that every job sent has
	// a goroutine about to take it.
	jobs chan *drainer
	idle atomic.Int32
}

func init() { drainPool.jobs = make(chan *drainer, maxIdleDrainers) }

// startDrain runs d.drain on an idle goroutine of the pool, or a new one.
func startDrain(d *drainer) {
	if drainPool.idle.Add(-1) >= 0 {
		drainPool.jobs <- d // never blocks: a goroutine was claimed
		return
	}
	drainPool.idle.Add(1)
	go drainWorker(d)
}

// drainWorker runs d, then the drains handed to it while it waits, until
// it finishes one while maxIdleDrainers wait.
func drainWorker(d *drainer) {
	for {
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
		d = <-drainPool.jobs
	}
}

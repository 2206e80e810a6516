package fleet

import (
	"math"
	"time"
)

// How a node judges another's silence (docs/fleet.md#5-lifecycle-across-nodes):
// a phi accrual detector (Hayashibara et al., 2004; Cassandra's and
// Akka's) over the intervals between the heartbeats it received, on its
// own clock, bounded by the heartbeat timeout below and by ceilingOf
// above.
const (
	// suspicionWindow is how many of the last intervals a node keeps of
	// each node it watches.
	suspicionWindow = 16
	// phiDead is the suspicion past which a silence is a death: the
	// chance that a heartbeat still comes, were the intervals normal with
	// the mean and deviation observed, is below 10^-phiDead.
	phiDead = 8
	// zDead is the silence, in standard deviations past the mean, at
	// which phi reaches phiDead: the normal quantile of 1-10^-8.
	zDead = 5.612
	// ceilingMost is the most the ceiling adds to the timeout (see
	// ceilingOf): a killed node's death stays within the timeout and a few
	// seconds however irregular its heartbeats were.
	ceilingMost = 3 * time.Second
)

// ceilingOf returns the longest silence a node takes for a delay rather
// than a death, whatever the intervals it observed: the timeout and half
// of it, at most ceilingMost more.
func ceilingOf(timeout time.Duration) time.Duration {
	return timeout + min(timeout/2, ceilingMost)
}

// suspicion is what a node knows of another node's heartbeats: when the
// last came and the intervals between the last ones, as it received
// them. Pure: the caller passes the times.
type suspicion struct {
	floor, ceiling time.Duration
	last           time.Time       // the last heartbeat, or when watching (again) began
	window         []time.Duration // the last intervals, oldest first
}

// newSuspicion returns the suspicion of a node watched since at, taken
// for dead after a silence of floor at least and ceiling at most.
func newSuspicion(floor, ceiling time.Duration, at time.Time) *suspicion {
	return &suspicion{floor: floor, ceiling: max(floor, ceiling), last: at}
}

// heard records a heartbeat received at at.
func (s *suspicion) heard(at time.Time) {
	if d := at.Sub(s.last); d > 0 {
		s.window = append(s.window, d)
		if len(s.window) > suspicionWindow {
			s.window = s.window[len(s.window)-suspicionWindow:]
		}
	}
	if at.After(s.last) {
		s.last = at
	}
}

// resume times the silence from at if later than the last heartbeat: the
// watcher was blind before (a new watch, NATS back), so the silence
// before at says nothing of the node. No interval is recorded.
func (s *suspicion) resume(at time.Time) {
	if at.After(s.last) {
		s.last = at
	}
}

// stats returns the mean and the standard deviation of the intervals
// kept, the deviation at least a tenth of the mean (a node heard at
// perfectly regular intervals is not taken for dead the instant one is a
// little late); ok false when fewer than two are kept.
func (s *suspicion) stats() (mean, dev float64, ok bool) {
	if len(s.window) < 2 {
		return 0, 0, false
	}
	for _, d := range s.window {
		mean += float64(d)
	}
	mean /= float64(len(s.window))
	for _, d := range s.window {
		dev += (float64(d) - mean) * (float64(d) - mean)
	}
	dev = math.Sqrt(dev / float64(len(s.window)))
	return mean, max(dev, mean/10), true
}

// phi returns the suspicion of the node at now: -log10 of the chance
// that its next heartbeat comes later than now, the intervals taken as
// normal with the mean and deviation observed (0 with too few of them,
// +Inf past what a float64 tells).
func (s *suspicion) phi(now time.Time) float64 {
	mean, dev, ok := s.stats()
	if !ok {
		return 0
	}
	p := 0.5 * math.Erfc((float64(now.Sub(s.last))-mean)/(dev*math.Sqrt2))
	return -math.Log10(p)
}

// threshold returns the silence after which the node is taken for dead:
// the one at which phi reaches phiDead, within [floor, ceiling] (floor
// while too few intervals are known).
func (s *suspicion) threshold() time.Duration {
	mean, dev, ok := s.stats()
	if !ok {
		return s.floor
	}
	t := time.Duration(mean + zDead*dev)
	return min(max(t, s.floor), s.ceiling)
}

// silence returns how long the node has been silent at now.
func (s *suspicion) silence(now time.Time) time.Duration {
	return now.Sub(s.last)
}

// dead reports whether the node's silence at now passed its threshold.
func (s *suspicion) dead(now time.Time) bool {
	return s.silence(now) > s.threshold()
}

// starved reports whether a watcher is too late itself to judge the
// others at now, and why: its own heartbeat last came back through its
// watch more than two heartbeat intervals (every) ago (its writes or its
// watch are slow: the others' heartbeats would be late alike), or its
// previous tick, due every tick, came more than a tick late (its
// goroutines did not run: what it calls silence is its own).
func starved(now, ownHeard, prevTick time.Time, every, tick time.Duration) (bool, string) {
	switch {
	case now.Sub(ownHeard) > 2*every:
		return true, "its own heartbeat is late"
	case !prevTick.IsZero() && now.Sub(prevTick) > 2*tick:
		return true, "its own watch is late"
	}
	return false, ""
}

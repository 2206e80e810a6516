package fleet

import (
	"fmt"
	"sync"
	"time"
)

// When a node is behind the log (docs/fleet.md#overload): one rule, which
// its readiness (Ready) and its admission of new connections (app's
// -fleet-max-lag) both apply.
//
// A node is behind when a position of the log it knows of has stayed
// unapplied for longer than Config.MaxLag: the time since it first knew
// of the oldest position it has not applied yet. It knows of positions
// from each message its consumer delivers (the message's position plus
// the stream's pending count), from its read barriers' acknowledgements
// and, while its consumer delivers nothing, from a request for the
// stream's last position every lastRefresh. So a consumer that delivers
// nothing while entries are pending (held, starved, cut off from its
// stream) makes the node behind at most lastRefresh plus MaxLag after the
// entries came, and a consumer that applies slower than the log grows
// once the oldest entry it has not reached is MaxLag old. A node that
// applies what it learns within MaxLag is never behind, however many
// entries a burst brings.

// lagStamps bounds the stamps a lagClock keeps: once full, a new position
// extends the newest stamp instead (the lag of the positions it covers is
// then counted from that stamp's time: at most too long, never too short).
const lagStamps = 64

// stamp is a position of the log and when the node first knew of it.
type stamp struct {
	pos uint64
	at  time.Time
}

// lagClock keeps when the node first knew of the positions it has not
// applied: stamps in increasing position, each covering the positions
// above the previous one; positions learned within grain of the newest
// stamp extend it.
type lagClock struct {
	mu     sync.Mutex
	grain  time.Duration
	stamps []stamp
}

// learn records that the log reaches pos at now, the node having applied
// applied.
func (c *lagClock) learn(pos, applied uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(applied)
	if pos <= applied {
		return
	}
	n := len(c.stamps)
	switch {
	case n > 0 && pos <= c.stamps[n-1].pos:
	case n > 0 && (n == lagStamps || now.Sub(c.stamps[n-1].at) < c.grain):
		c.stamps[n-1].pos = pos
	default:
		c.stamps = append(c.stamps, stamp{pos, now})
	}
}

// lag returns how long, at now, the node has known of the oldest position
// it has not applied, the one after applied (0 when it applied every
// position it knows of).
func (c *lagClock) lag(applied uint64, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(applied)
	if len(c.stamps) == 0 {
		return 0
	}
	return max(now.Sub(c.stamps[0].at), 0)
}

// drop forgets the stamps the node applied.
func (c *lagClock) drop(applied uint64) {
	i := 0
	for i < len(c.stamps) && c.stamps[i].pos <= applied {
		i++
	}
	if i > 0 {
		c.stamps = append(c.stamps[:0], c.stamps[i:]...)
	}
}

// BehindError is [Fleet.Behind]'s answer for a node behind the log.
type BehindError struct {
	Applied, Last uint64        // the node's Position
	Lag           time.Duration // how long it has known of the position after Applied
	MaxLag        time.Duration // Config.MaxLag
}

func (e *BehindError) Error() string {
	return fmt.Sprintf("fleet: behind the log (applied %d of %d; %d known for %s, more than %s)",
		e.Applied, e.Last, e.Applied+1, e.Lag.Round(time.Millisecond), e.MaxLag)
}

// Lag returns how long this node has known of the oldest position of the
// log it has not applied (0 when it applied every position it knows of):
// what [Fleet.Behind] compares with Config.MaxLag.
func (f *Fleet) Lag() time.Duration {
	applied, _ := f.Position()
	return f.lag.lag(applied, time.Now())
}

// Behind returns a [*BehindError] while the node is behind the log: it has
// known of a position of the log for longer than Config.MaxLag without
// applying it; nil otherwise. It asks nothing of NATS and is cheap enough
// for every new connection.
func (f *Fleet) Behind() error {
	applied, last := f.Position()
	lag := f.lag.lag(applied, time.Now())
	if lag <= f.cfg.MaxLag {
		return nil
	}
	return &BehindError{Applied: applied, Last: last, Lag: lag, MaxLag: f.cfg.MaxLag}
}

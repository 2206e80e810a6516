package auth

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// table is a bounded, sharded map of failure counts. Each shard keeps its
// entries in a list ordered by their last failure and forgets the oldest
// when it is full.
type table[K comparable] struct {
	n      atomic.Int64 // entries over all shards: 0 skips every lock
	hash   func(K) uint64
	shards [tableShards]shard[K]
}

const tableShards = 16

type shard[K comparable] struct {
	mu   sync.Mutex
	max  int
	m    map[K]*entry[K]
	head entry[K] // sentinel: head.next is the newest, head.prev the oldest
}

type entry[K comparable] struct {
	key        K
	count      int
	last       int64 // Unix nanoseconds of the last failure
	until      int64 // Unix nanoseconds when the delay ends
	prev, next *entry[K]
}

func newTable[K comparable](max int, hash func(K) uint64) *table[K] {
	t := &table[K]{hash: hash}
	per := (max + tableShards - 1) / tableShards
	for i := range t.shards {
		s := &t.shards[i]
		s.max = per
		s.m = make(map[K]*entry[K])
		s.head.next, s.head.prev = &s.head, &s.head
	}
	return t
}

func (t *table[K]) shard(k K) *shard[K] { return &t.shards[t.hash(k)%tableShards] }

// decayed applies the decay to e at now: its count halves for every full
// decay period since its last failure or the end of its delay, whichever
// is later.
func decayed[K comparable](e *entry[K], now int64, th *throttle) {
	quiet := now - max(e.last, e.until)
	if quiet < int64(th.decay) || e.count == 0 {
		return
	}
	periods := quiet / int64(th.decay)
	if periods >= 63 {
		e.count = 0
	} else {
		e.count >>= periods
	}
	e.last = max(e.last, e.until) + periods*int64(th.decay)
}

// charge is the outcome of [table.charge].
type charge struct {
	ok          bool  // one failure was counted
	blocked     bool  // not counted: the key is in its delay until until
	until       int64 // the end of the delay (Unix nanoseconds) when blocked
	prev, after int64 // the end of the delay before and after the charge
}

// charge counts one failure for k. With check, a key in its delay is not
// charged: the result is blocked. Without create, a key that has no
// failures is not charged. With force, the delay starts from the first
// failure instead of the free-th.
func (t *table[K]) charge(now time.Time, k K, free int, force, check, create bool, th *throttle) charge {
	if !create && t.n.Load() == 0 {
		return charge{}
	}
	ns := now.UnixNano()
	s := t.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[k]
	if e != nil && check && ns < e.until {
		return charge{blocked: true, until: e.until}
	}
	if e == nil {
		if !create {
			return charge{}
		}
		if len(s.m) >= s.max {
			old := s.head.prev
			s.unlink(old)
			delete(s.m, old.key)
			t.n.Add(-1)
		}
		e = &entry[K]{key: k}
		s.m[k] = e
		t.n.Add(1)
	} else {
		decayed(e, ns, th)
		if e.count == 0 && !create {
			return charge{}
		}
		s.unlink(e)
	}
	s.pushFront(e)
	e.count++
	e.last = ns
	if force {
		free = 1
	}
	c := charge{ok: true, prev: e.until}
	if d := th.delay(e.count, free); d > 0 {
		e.until = max(e.until, ns+int64(d))
	}
	c.after = e.until
	return c
}

// force makes the delay of k count from its first failure, after the
// charge c, and records the new end of the delay in c.
func (t *table[K]) force(k K, c *charge, th *throttle) {
	s := t.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[k]
	if e == nil || e.until != c.after {
		return // changed meanwhile; the next failure forces the delay
	}
	e.until = max(e.until, e.last+int64(th.delay(e.count, 1)))
	c.after = e.until
}

// count returns the failure count of k at now.
func (t *table[K]) count(now time.Time, k K, th *throttle) int {
	if t.n.Load() == 0 {
		return 0
	}
	s := t.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[k]
	if e == nil {
		return 0
	}
	decayed(e, now.UnixNano(), th)
	return e.count
}

// sub takes n failures off k. A key left below free ends its delay; the
// delay set by the advance charge undo, if it is still the key's, is
// taken back; a key left without failures is forgotten.
func (t *table[K]) sub(now time.Time, k K, n, free int, undo *charge, th *throttle) {
	if n <= 0 || t.n.Load() == 0 {
		return
	}
	s := t.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[k]
	if e == nil {
		return
	}
	decayed(e, now.UnixNano(), th)
	e.count = max(e.count-n, 0)
	if undo != nil && undo.ok && e.until == undo.after {
		e.until = undo.prev
	}
	if e.count < free {
		e.until = 0
	}
	if e.count == 0 {
		s.unlink(e)
		delete(s.m, k)
		t.n.Add(-1)
	}
}

// remove forgets k and returns its failure count.
func (t *table[K]) remove(k K) int {
	if t.n.Load() == 0 {
		return 0
	}
	s := t.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[k]
	if e == nil {
		return 0
	}
	s.unlink(e)
	delete(s.m, k)
	t.n.Add(-1)
	return e.count
}

func (s *shard[K]) unlink(e *entry[K]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (s *shard[K]) pushFront(e *entry[K]) {
	e.prev, e.next = &s.head, s.head.next
	s.head.next.prev = e
	s.head.next = e
}

// hashAddr hashes an address for the shard choice.
func hashAddr(a netip.Addr) uint64 {
	b := a.As16()
	return mix(binary.BigEndian.Uint64(b[:8]) ^ mix(binary.BigEndian.Uint64(b[8:])))
}

// mix is the finalizer of MurmurHash3.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb34a1a4a0e93
	x ^= x >> 33
	return x
}

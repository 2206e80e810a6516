package channel

import "time"

// histEntry is one notification kept for replay.
type histEntry struct {
	seq   uint64
	res   string // the "resource" of the notification
	about string // the resource it is about: res, or the child of an UPDATE
	at    time.Time
	data  []byte
}

// history is the bounded record of recent notifications (docs/channel.md#replay-after-a-reconnect): a
// ring of at most max entries holding at most maxBytes of notifications,
// none older than age. Guarded by the tree's lock.
type history struct {
	buf      []histEntry
	head, n  int
	max      int
	maxBytes int
	bytes    int // of the notifications held
	age      time.Duration
	// lost is the greatest seq whose notifications are no longer all
	// held: evicted ones, or the last seq before a restart.
	lost uint64
}

// add records a notification, evicting the oldest ones beyond the bounds.
func (h *history) add(e histEntry) {
	h.trim(e.at)
	if h.max <= 0 || len(e.data) > h.maxBytes {
		h.lost = max(h.lost, e.seq)
		return
	}
	if h.n == h.max {
		h.evict()
	}
	for h.n > 0 && h.bytes+len(e.data) > h.maxBytes {
		h.evict()
	}
	if h.n == len(h.buf) {
		h.grow()
	}
	h.buf[(h.head+h.n)%len(h.buf)] = e
	h.n++
	h.bytes += len(e.data)
}

// grow enlarges the ring up to max entries, keeping their order.
func (h *history) grow() {
	nb := make([]histEntry, min(h.max, 2*len(h.buf)+64))
	for i := 0; i < h.n; i++ {
		nb[i] = h.buf[(h.head+i)%len(h.buf)]
	}
	h.buf, h.head = nb, 0
}

// evict drops the oldest entry.
func (h *history) evict() {
	e := &h.buf[h.head]
	h.lost = max(h.lost, e.seq)
	h.bytes -= len(e.data)
	*e = histEntry{}
	h.head = (h.head + 1) % len(h.buf)
	h.n--
}

// trim drops the entries older than age at now.
func (h *history) trim(now time.Time) {
	if h.age <= 0 {
		return
	}
	limit := now.Add(-h.age)
	for h.n > 0 && h.buf[h.head].at.Before(limit) {
		h.evict()
	}
}

// replay returns the notifications of res after since that keep allows
// (by the resource they are about), oldest first, and whether the history
// still holds all of them. cur is the current seq:
// a since beyond it comes from a history this tree never had. The frames
// hold at most maxBytes of data; a replay that would hold more reports
// false (the client re-reads the state instead).
func (h *history) replay(res string, since, cur uint64, now time.Time, maxBytes int, keep func(about string) bool) ([]Frame, bool) {
	h.trim(now)
	if since < h.lost || since > cur {
		return nil, false
	}
	var fs []Frame
	size := 0
	for i := 0; i < h.n; i++ {
		e := &h.buf[(h.head+i)%len(h.buf)]
		if e.seq > since && e.res == res && keep(e.about) {
			if size += len(e.data); size > maxBytes {
				return nil, false
			}
			fs = append(fs, Frame{Seq: e.seq, Data: e.data})
		}
	}
	return fs, true
}

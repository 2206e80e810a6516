package channel

import (
	"strings"
	"time"
	"unsafe"
)

// histEntry is one notification kept for replay: its bytes, or, for a
// change that nobody received when it was made (emitChange), what
// encodes them, which a replay does. The history holds 50,000 by default
// on every node: an entry is 96 bytes.
type histEntry struct {
	seq   uint64
	res   string // the "resource" of the notification
	about string // the resource it is about: res, or the child of an UPDATE
	at    int64  // when it was made, Unix nanoseconds
	// p and n are the notification's bytes, or the entity of one not
	// encoded (nil: none); it never changes once made.
	p    *byte
	n    uint32
	size uint32 // what the history counts it as (noteSize, upSize, or its length)
	// A change's notification not encoded (verb not 0): its kind when res
	// is about, else the key of the parent's UPDATE; its sender; and the
	// names that give its type.
	from  string
	names names
	verb  verb
}

// encodedEntry returns the entry of data, a notification of res about
// about, counted as size.
func encodedEntry(seq uint64, res, about string, at time.Time, data []byte, size int) histEntry {
	return histEntry{seq: seq, res: res, about: about, at: at.UnixNano(),
		p: unsafe.SliceData(data), n: uint32(len(data)), size: uint32(size)}
}

// lazyEntry returns the entry of a change's notification not encoded: v
// its kind or its UPDATE's key, the type of nm, pub and from as noteBytes
// takes them.
func lazyEntry(seq uint64, res, about string, at time.Time, size int, v verb, nm names, pub []byte, from string) histEntry {
	return histEntry{seq: seq, res: res, about: about, at: at.UnixNano(),
		p: unsafe.SliceData(pub), n: uint32(len(pub)), size: uint32(size),
		from: from, names: nm, verb: v}
}

// raw returns what p and n hold, nil for none.
func (e *histEntry) raw() []byte {
	if e.p == nil {
		return nil
	}
	return unsafe.Slice(e.p, e.n)
}

// bytes returns the notification.
func (e *histEntry) bytes() []byte {
	if e.verb == 0 {
		return e.raw()
	}
	typ := e.names.pair().typ
	if e.res == e.about {
		return noteBytes(e.verb.String(), e.about, typ, e.raw(), e.from, e.seq)
	}
	name := e.about[strings.LastIndexByte(e.about, '/')+1:]
	return upBytes(e.verb.String(), e.res, name, typ, e.raw(), e.seq)
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
	if h.max <= 0 || int(e.size) > h.maxBytes {
		h.lost = max(h.lost, e.seq)
		return
	}
	if h.n == h.max {
		h.evict()
	}
	for h.n > 0 && h.bytes+int(e.size) > h.maxBytes {
		h.evict()
	}
	if h.n == len(h.buf) {
		h.grow()
	}
	h.buf[(h.head+h.n)%len(h.buf)] = e
	h.n++
	h.bytes += int(e.size)
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
	h.bytes -= int(e.size)
	*e = histEntry{}
	h.head = (h.head + 1) % len(h.buf)
	h.n--
}

// trim drops the entries older than age at now (Unix nanoseconds).
func (h *history) trim(now int64) {
	if h.age <= 0 {
		return
	}
	limit := now - int64(h.age)
	for h.n > 0 && h.buf[h.head].at < limit {
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
	h.trim(now.UnixNano())
	if since < h.lost || since > cur {
		return nil, false
	}
	var fs []Frame
	size := 0
	for i := 0; i < h.n; i++ {
		e := &h.buf[(h.head+i)%len(h.buf)]
		if e.seq > since && e.res == res && keep(e.about) {
			data := e.bytes()
			if size += len(data); size > maxBytes {
				return nil, false
			}
			fs = append(fs, Frame{Seq: e.seq, Data: data})
		}
	}
	return fs, true
}

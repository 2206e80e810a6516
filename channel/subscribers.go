package channel

import "time"

// subList is the subscribers of one path, in a slice for fast fan-out;
// the index map appears once the list is long enough to need it.
type subList struct {
	cs  []*Client
	idx map[*Client]int
}

// indexAt is the length from which a subList keeps an index.
const indexAt = 16

// find returns c's position in l, or -1.
func (l *subList) find(c *Client) int {
	if l.idx != nil {
		if i, ok := l.idx[c]; ok {
			return i
		}
		return -1
	}
	for i, x := range l.cs {
		if x == c {
			return i
		}
	}
	return -1
}

// add appends c.
func (l *subList) add(c *Client) {
	l.cs = append(l.cs, c)
	if l.idx == nil && len(l.cs) > indexAt {
		l.idx = make(map[*Client]int, len(l.cs))
		for i, x := range l.cs {
			l.idx[x] = i
		}
	} else if l.idx != nil {
		l.idx[c] = len(l.cs) - 1
	}
}

// remove takes c out, moving the last subscriber into its place.
func (l *subList) remove(c *Client) {
	i := l.find(c)
	if i < 0 {
		return
	}
	last := len(l.cs) - 1
	l.cs[i] = l.cs[last]
	l.cs[last] = nil
	l.cs = l.cs[:last]
	if l.idx != nil {
		delete(l.idx, c)
		if i < last {
			l.idx[l.cs[i]] = i
		}
	}
}

// subscribe adds c to the subscribers of path; it reports false when c
// has as many subscriptions as allowed. Called with the lock.
func (t *Tree) subscribe(c *Client, path string) bool {
	if c.subs.has(path) {
		return true
	}
	if c.subs.len() >= t.opt.Subscriptions {
		return false
	}
	c.subs.add(path)
	l := t.subs[path]
	if l == nil {
		l = &subList{}
		t.subs[path] = l
	}
	l.add(c)
	return true
}

// unsubscribe removes c from the subscribers of path. Called with the
// lock.
func (t *Tree) unsubscribe(c *Client, path string) {
	if !c.subs.remove(path) {
		return
	}
	if l := t.subs[path]; l != nil {
		l.remove(c)
		if len(l.cs) == 0 {
			delete(t.subs, path)
		}
	}
}

// reaches reports whether a notification of res about res would reach a
// subscriber now: one of its subscribers may read it. Called with the
// lock.
func (t *Tree) reaches(res string) bool {
	l := t.subs[res]
	if l == nil {
		return false
	}
	var a access
	t.accessAt(&a, res)
	if a.everyone(OpRead) {
		return len(l.cs) > 0
	}
	for _, c := range l.cs {
		if a.delivers(c) {
			return true
		}
	}
	return false
}

// emit records the notification data to the subscribers of res in the
// history and queues it to every subscriber of res that may read about,
// the resource the notification is about (docs/channel.md#denials); it
// returns how many took it. a is the access at about, or nil for emit to
// find it. Called with the lock, so every subscriber gets the
// notifications of a resource in the order of their seq.
func (t *Tree) emit(res, about string, a *access, data []byte, seq uint64) int {
	return t.emitTo(t.subs[res], res, about, a, data, len(data), seq, t.now())
}

// emitTo is emit with the subscribers of res, l (nil for none), the
// size the history counts data as, and the time to record, found by the
// caller. Called with the lock.
func (t *Tree) emitTo(l *subList, res, about string, a *access, data []byte, size int, seq uint64, at time.Time) int {
	t.hist.add(encodedEntry(seq, res, about, at, data, size))
	if l == nil {
		return 0
	}
	var found access
	if a == nil {
		a = &found
		t.accessAt(a, about)
	}
	judge := !a.everyone(OpRead)
	f := Frame{Seq: seq, Data: data}
	n := 0
	for _, c := range l.cs {
		if judge && !a.delivers(c) {
			continue
		}
		if c.push(f) {
			n++
		}
	}
	t.counts.delivered.Add(uint64(n))
	return n
}

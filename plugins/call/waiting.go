package call

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Bounds of the invitations waiting for a session, beyond the per-target
// ones of the settings (SettingWaitCount, SettingWaitBytes).
const (
	// maxWaiting and maxWaitingBytes bound the messages waiting, all
	// targets together.
	maxWaiting      = 10000
	maxWaitingBytes = 64 << 20
	// maxRemembered bounds the messages remembered, delivered ones
	// included, so that CANCEL can tell delivered from unknown; past it
	// the oldest are forgotten before their time.
	maxRemembered = 100000
	// retryEvery is how often the retry loop offers waiting invitations
	// again to their targets' WebSocket subscribers, to at most
	// maxTargetsPerRound targets a round, in turn: each target every
	// 250 ms while at most 1,000 have invitations waiting.
	retryEvery         = 250 * time.Millisecond
	maxTargetsPerRound = 1000
	// idleRounds is how many times as long as a round the retry loop
	// waits before the next, at least: it offers a fifth of the time at
	// most.
	idleRounds = 4
	// offerTimeout bounds one offer to the tree from the retry loop.
	offerTimeout = 5 * time.Second
)

// queue is the messages waiting for one target, oldest first.
type queue struct {
	msgs  []*message
	bytes int
}

// waiting keeps the invitations no session has taken yet, and for as
// long, the ones delivered or withdrawn (so that CANCEL can tell), each
// for at most wait. A waiting message is offered again every retryEvery
// by one goroutine, running while any wait, and at once when a GET kept
// open of its target starts. No lock is held while the tree is called.
type waiting struct {
	st       store
	slots    *slots // nil: the bounds count this plugin's messages only
	wait     time.Duration
	maxCount int // messages waiting for one target
	maxBytes int // bytes waiting for one target

	mu       sync.Mutex
	sent     *sync.Cond          // signalled when an offer ends
	byID     map[string]*message // every message still remembered
	order    []*message          // the same, oldest first: by deadline
	pending  map[string]*queue   // by target
	npending int                 // messages pending, all targets
	nbytes   int                 // their bytes
	running  bool                // the retry loop runs
	resume   string              // the first target of the next round, by name
	stop     chan struct{}       // closed by close
	loop     sync.WaitGroup      // the retry loop
}

func newWaiting(st store, wait time.Duration, maxCount, maxBytes int) *waiting {
	w := &waiting{
		st: st, wait: wait, maxCount: maxCount, maxBytes: maxBytes,
		byID: make(map[string]*message), pending: make(map[string]*queue),
		stop: make(chan struct{}),
	}
	w.sent = sync.NewCond(&w.mu)
	return w
}

// offer sends m to the target's sessions and reports whether any took
// it; a taken message is remembered as delivered. One that none took
// left no trace in the tree.
func (w *waiting) offer(ctx context.Context, m *message) (bool, error) {
	r, err := w.st.send(ctx, m.sender, m.wire)
	if err != nil {
		return false, err
	}
	if r.Code != "success" || r.SentCount == 0 {
		return false, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	m.delivered, m.wire = true, nil
	w.remember(m, time.Now())
	return true, nil
}

// remember keeps m for the wait from now, forgetting the messages whose
// time is over and, past maxRemembered, the oldest. w.mu is held.
func (w *waiting) remember(m *message, now time.Time) {
	w.forget(now)
	for len(w.order) >= maxRemembered {
		w.drop(w.order[0])
	}
	m.deadline = now.Add(w.wait)
	w.byID[m.id] = m
	w.order = append(w.order, m)
}

// hold keeps m waiting: 503 Too Many Waiting Messages past the count
// bounds, 503 Waiting Messages Too Large past the byte bounds. With
// slots, the target's bounds count the messages waiting in every plugin
// that shares the tree, and m takes a slot there first.
func (w *waiting) hold(ctx context.Context, m *message) error {
	w.mu.Lock()
	err := w.check(m, time.Now())
	w.mu.Unlock()
	if err != nil {
		return err
	}
	if w.slots != nil {
		if err := w.slots.take(ctx, m); err != nil {
			return err
		}
	}
	w.mu.Lock()
	now := time.Now()
	if err := w.check(m, now); err != nil {
		w.mu.Unlock()
		w.release(m)
		return err
	}
	w.remember(m, now)
	q := w.pending[m.target]
	if q == nil {
		q = &queue{}
	}
	q.msgs = append(q.msgs, m)
	q.bytes += m.size
	w.pending[m.target] = q
	w.npending++
	w.nbytes += m.size
	if !w.running && !w.closed() {
		w.running = true
		w.loop.Add(1)
		go w.retry()
	}
	w.mu.Unlock()
	return nil
}

// check answers whether m may wait beside the messages waiting here.
// w.mu is held.
func (w *waiting) check(m *message, now time.Time) error {
	w.forget(now)
	q := w.pending[m.target]
	if q == nil {
		q = &queue{}
	}
	switch {
	case w.npending >= maxWaiting || len(q.msgs) >= w.maxCount:
		return errTooManyWait
	case w.nbytes+m.size > maxWaitingBytes || q.bytes+m.size > w.maxBytes:
		return errWaitTooLarge
	}
	return nil
}

// release frees the slot of m, which waits no more, when there are
// slots. w.mu is not held.
func (w *waiting) release(m *message) {
	if w.slots == nil || m.slot == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), offerTimeout)
	defer cancel()
	w.slots.release(ctx, m)
}

// closed reports whether close was called.
func (w *waiting) closed() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// withdraw ends the wait of message id to target, on behalf of who. An
// offer under way is waited for, so that a message a session took is
// never reported withdrawn.
func (w *waiting) withdraw(target, id, who string, admin bool) error {
	m, err := w.take(target, id, who, admin)
	if err != nil {
		return err
	}
	w.release(m)
	return nil
}

// take is withdraw but for the release of the slot: it returns the
// message withdrawn.
func (w *waiting) take(target, id, who string, admin bool) (*message, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forget(time.Now())
	m := w.byID[id]
	if m == nil || m.target != target {
		return nil, errNotFound
	}
	if m.sender != who && !admin {
		return nil, errForbidden
	}
	for m.sending {
		w.sent.Wait()
	}
	if w.byID[id] != m {
		return nil, errNotFound // dropped meanwhile
	}
	if m.delivered {
		return nil, errDelivered
	}
	delete(w.byID, id) // its place in order goes with its deadline
	w.unqueue(m)
	return m, nil
}

// unqueue takes m out of the pending ones, if it is there. w.mu is held.
func (w *waiting) unqueue(m *message) {
	q := w.pending[m.target]
	if q == nil {
		return
	}
	for i, x := range q.msgs {
		if x == m {
			q.msgs = append(q.msgs[:i:i], q.msgs[i+1:]...)
			q.bytes -= m.size
			w.npending--
			w.nbytes -= m.size
			break
		}
	}
	if len(q.msgs) == 0 {
		delete(w.pending, m.target)
	}
}

// forget drops the messages whose time is over: the oldest ones, all
// waiting the same time. w.mu is held.
func (w *waiting) forget(now time.Time) {
	for len(w.order) > 0 && now.After(w.order[0].deadline) {
		w.drop(w.order[0])
	}
}

// drop forgets the oldest message m. w.mu is held.
func (w *waiting) drop(m *message) {
	w.order[0] = nil
	w.order = w.order[1:]
	if w.byID[m.id] != m {
		return // withdrawn already
	}
	delete(w.byID, m.id)
	if !m.delivered {
		w.unqueue(m)
	}
}

// flush offers the waiting messages of target now: a GET kept open of it
// has just started.
func (w *waiting) flush(target string) {
	w.mu.Lock()
	var msgs []*message
	if q := w.pending[target]; q != nil {
		msgs = append(msgs, q.msgs...)
	}
	w.mu.Unlock()
	w.offerAll(msgs)
}

// offerAll offers msgs, all to one target, in order, and stops at the
// first that no session takes: the others would find none either.
func (w *waiting) offerAll(msgs []*message) {
	for _, m := range msgs {
		if !w.deliver(m) {
			return
		}
	}
}

// deliver offers the waiting message m again, unless it is no longer
// waiting or an offer of it is under way, and marks it delivered when a
// session took it. It reports false when the offer found no session (or
// the tree could not be reached). w.mu is not held during the offer: m
// is marked sending meanwhile, so that it goes out once and a CANCEL
// waits for the outcome.
func (w *waiting) deliver(m *message) bool {
	w.mu.Lock()
	if w.byID[m.id] != m || m.delivered || m.sending {
		w.mu.Unlock()
		return true
	}
	m.sending = true
	wire := m.wire
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), offerTimeout)
	r, err := w.st.send(ctx, m.sender, wire)
	cancel()
	ok := err == nil && r.Code == "success" && r.SentCount > 0
	w.mu.Lock()
	m.sending = false
	w.sent.Broadcast()
	if ok {
		m.delivered, m.wire = true, nil
		w.unqueue(m)
	}
	w.mu.Unlock()
	if ok {
		w.release(m)
	}
	return ok
}

// retry offers the waiting messages while any wait, until close: a
// round every retryEvery, or when rounds take long (many targets, an
// isolated tree a round trip away), idle idleRounds times as long as the
// last round took, so that the loop keeps the tree busy a bounded share
// of the time however many wait.
func (w *waiting) retry() {
	defer w.loop.Done()
	pause := time.NewTimer(retryEvery)
	defer pause.Stop()
	for {
		select {
		case <-w.stop:
		case <-pause.C:
		}
		w.mu.Lock()
		w.forget(time.Now())
		if len(w.pending) == 0 || w.closed() {
			// Under the lock, so that hold starts a loop again.
			w.running = false
			w.mu.Unlock()
			return
		}
		targets := w.turn()
		w.mu.Unlock()
		start := time.Now()
		for _, msgs := range targets {
			if w.closed() {
				break
			}
			w.offerAll(msgs)
		}
		pause.Reset(max(retryEvery, idleRounds*time.Since(start)))
	}
}

// turn returns the messages of the targets whose turn it is: at most
// maxTargetsPerRound targets, in the order of their names from where the
// last round stopped, so that every target gets its turn however many
// wait and a round costs the tree a bounded number of offers. w.mu is
// held.
func (w *waiting) turn() [][]*message {
	names := make([]string, 0, len(w.pending))
	for name := range w.pending {
		names = append(names, name)
	}
	slices.Sort(names)
	start, _ := slices.BinarySearch(names, w.resume)
	names = slices.Concat(names[start:], names[:start])
	names = names[:min(len(names), maxTargetsPerRound)]
	w.resume = names[len(names)-1] + "\x00" // the next name after it
	targets := make([][]*message, len(names))
	for i, name := range names {
		targets[i] = slices.Clone(w.pending[name].msgs)
	}
	return targets
}

// close stops the retry loop and waits for it, as long as ctx allows.
// Messages still waiting are not offered again.
func (w *waiting) close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed() {
		close(w.stop)
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.loop.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

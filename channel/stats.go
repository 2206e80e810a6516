package channel

import "sync/atomic"

// Stats are counts of a [Tree] for monitoring, as [Tree.Stats] returns
// them.
type Stats struct {
	Clients       int    // clients connected
	Subscriptions int    // subscriptions of all clients
	Queued        int    // frames queued for all clients, not yet taken
	Delivered     uint64 // notifications queued to a subscriber since the start
	SlowConsumers uint64 // clients ended because their queue was full
	// Waits counts the times an operation waited for changes being
	// stored before it could run: one that read or wrote what they
	// change, or a seq that the store's mark did not cover yet.
	Waits uint64
}

// counters are the running totals of Stats.
type counters struct {
	delivered atomic.Uint64
	slow      atomic.Uint64
	waits     atomic.Uint64
}

// Stats returns the tree's counts now. It visits every client, so call it
// at a monitoring pace, not per request.
func (t *Tree) Stats() Stats {
	t.mu.RLock()
	s := Stats{Clients: len(t.clients), Delivered: t.counts.delivered.Load(), SlowConsumers: t.counts.slow.Load(), Waits: t.counts.waits.Load()}
	cs := make([]*Client, 0, len(t.clients))
	for _, c := range t.clients {
		s.Subscriptions += c.subs.len()
		cs = append(cs, c)
	}
	t.mu.RUnlock()
	for _, c := range cs {
		c.mu.Lock()
		s.Queued += len(c.q)
		c.mu.Unlock()
	}
	return s
}

package channel

// An operation of a client runs under the tree's lock as attempts: one
// that finds a part of the tree marked by a batch being stored waits for
// that batch and starts over (commit.go); one whose change joins a batch
// waits for it to be applied, or, pipelined, goes on and has its reply
// queued with the batch.

// pendingReply is the reply to a connection's change that is queued once
// its batch is applied (ok, nil for a message without msg_id) or
// dropped.
type pendingReply struct {
	c     *Client
	ok    []byte
	msgID []byte
}

// Pipelining: a connection's change that joins a batch does not wait for
// it; the connection's next message runs meanwhile, and the reply is
// queued once the batch is applied, after its notifications, so that one
// connection has up to pipelineDepth changes in the batches being saved
// (and a batch carries many changes of each connection). A message of a
// connection with a change in a batch that is not applied yet runs at
// once only when it is itself a change that joins a batch (the marks of
// the batches keep it apart from what the earlier change touches, and
// the seqs of a later batch are higher); anything else (a read, a change
// applied at once, a failure) waits for that batch first, so that the
// connection's messages behave as if run one after the other and its
// replies come in their order.

// outcome is what one attempt of an operation under the lock gives: its
// reply or failure reason, or what it must wait for before it starts
// over (wait), or the batch its change joined (b).
type outcome struct {
	reply  []byte
	reason string
	wait   <-chan struct{}
	b      *batch
	// deferred: the change joined b and its reply is queued with it (see
	// pipelining).
	deferred bool
}

// fail returns the outcome of a failed operation.
func fail(reason string) outcome { return outcome{reason: reason} }

// run runs attempt, under the lock, until it no longer has to wait, then
// waits for the batch its change joined, if any: the reply comes after
// the change is stored and applied (its notifications sent), or fails
// with "store failed" when the store failed.
func (t *Tree) run(cl *caller, attempt func() outcome) ([]byte, string) {
	for {
		out := t.attempt(cl, attempt)
		if out.wait != nil {
			t.counts.waits.Add(1)
			<-out.wait
			continue
		}
		if out.deferred {
			t.kickCommitter()
			cl.deferred = true
			return nil, ""
		}
		if out.b != nil {
			t.kickCommitter()
			<-out.b.done
			if out.b.err != nil {
				return nil, reasonStore
			}
		}
		return out.reply, out.reason
	}
}

// attempt runs one attempt of an operation of cl under the lock, which
// the caller holds already when cl.held (a fleet's apply: a tree without
// store never waits, so run returns after this one attempt).
func (t *Tree) attempt(cl *caller, attempt func() outcome) outcome {
	if cl.held {
		out := attempt()
		if out.wait != nil || out.b != nil {
			panic("channel: an operation under a held lock has to wait")
		}
		return out
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := cl.c
	if cl.pipe && c.unapplied() && c.pipelined.Load() >= pipelineDepth {
		return outcome{wait: c.pend.done}
	}
	if cl.pipe && t.pend != nil && len(t.pend.changes) >= maxBatchSize {
		return outcome{wait: t.pend.done} // the batch is full: the next one
	}
	out := attempt()
	if cl.pipe && out.b != nil {
		r := pendingReply{c: c, msgID: cl.msgID}
		if cl.msgID != nil {
			r.ok = out.reply
			if r.ok == nil {
				r.ok = successReply(cl.msgID)
			}
		}
		out.b.replies = append(out.b.replies, r)
		c.pipelined.Add(1)
		out.deferred = true
	}
	return out
}

// unapplied reports whether the last change c proposed is in a batch not
// yet applied or dropped. Called with the lock.
func (c *Client) unapplied() bool { return c.pend != nil && !c.pend.finished }

// settle waits until the changes c pipelined are applied or dropped, and
// their replies queued (see pipelining).
func (t *Tree) settle(c *Client) {
	if c.pipelined.Load() == 0 {
		return
	}
	var w <-chan struct{}
	t.mu.Lock()
	if c.unapplied() {
		w = c.pend.done
	}
	t.mu.Unlock()
	if w != nil {
		t.counts.waits.Add(1)
		<-w
	}
}

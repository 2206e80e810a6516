package channel

import "strconv"

// subscribeMsg runs SUBSCRIBE: notify the client of changes to /p and
// its immediate children, after replaying (with "since") the history's
// notifications of /p after that seq. The reply carries the tree's epoch;
// a since that comes with another epoch is not recovered.
func (t *Tree) subscribeMsg(cl *caller, m *message, r resource) ([]byte, string) {
	if cl.c == nil {
		return nil, reasonNotSupported
	}
	if r.hasAttr || r.hasQuery {
		return nil, reasonInvalidRes
	}
	c := cl.c
	recovered := false
	t.mu.Lock()
	if reason := t.mayListen(cl, r.path, m.Stream); reason != "" {
		t.mu.Unlock()
		return nil, reason
	}
	if !c.subs.has(r.path) && c.subs.len() >= t.opt.Subscriptions {
		t.mu.Unlock()
		return nil, reasonTooManySubs
	}
	// A since of another history (its epoch given and not this one) is
	// not replayed: its seqs number other notifications.
	if m.Since != nil && (m.Epoch == nil || *m.Epoch == t.epoch) {
		var fs []Frame
		fs, recovered = t.hist.replay(r.path, *m.Since, t.seq, t.now(), c.room(), t.reader(c.identity))
		c.pushReplay(fs)
	}
	t.subscribe(c, r.path)
	t.mu.Unlock()
	b := replyStart(m.MsgID, 32+len(t.epoch))
	if m.Since != nil {
		b = strconv.AppendBool(append(b, `,"recovered":`...), recovered)
	}
	b = append(append(append(b, `,"epoch":"`...), t.epoch...), '"', '}')
	return b, ""
}

// reader returns a function reporting whether identity may read a
// resource now, for a replay: it judges each resource once. Use it with
// the lock held.
func (t *Tree) reader(identity string) func(path string) bool {
	judged := make(map[string]bool)
	return func(path string) bool {
		ok, seen := judged[path]
		if !seen {
			ok = t.permit(identity, OpRead, path)
			judged[path] = ok
		}
		return ok
	}
}

// unsubscribeMsg runs UNSUBSCRIBE.
func (t *Tree) unsubscribeMsg(cl *caller, m *message, r resource) ([]byte, string) {
	if cl.c == nil {
		return nil, reasonNotSupported
	}
	if r.hasAttr || r.hasQuery {
		return nil, reasonInvalidRes
	}
	t.mu.Lock()
	t.unsubscribe(cl.c, r.path)
	t.mu.Unlock()
	return nil, ""
}

// notify runs NOTIFY: pass data to every subscriber of /p, changing
// nothing. The notification gets a seq and enters the history even when
// nobody receives it, so that a client subscribing again with "since"
// gets it; an offer ("offer": true) that no subscriber would receive
// fails with no subscriber before it gets a seq, and leaves no trace.
func (t *Tree) notify(cl *caller, m *message, r resource) ([]byte, string) {
	if r.hasAttr || r.hasQuery {
		return nil, reasonInvalidRes
	}
	// The data is passed on as the sender wrote it, compacted, private
	// fields and all; the notification is encoded here, outside the
	// lock, but for its seq.
	data := []byte(m.Data)
	if data == nil {
		data = []byte("null")
	}
	data, err := compactValid(data)
	if err != nil {
		return nil, reasonInvalidEntity
	}
	head := notifyHead(r.path, data, cl.from)
	sent := 0
	_, reason := t.run(cl, func() outcome {
		var a access // found once, for the judgment and for emit
		if reason := t.mayNotify(cl, &a, r.path); reason != "" {
			return fail(reason)
		}
		// In a fleet the proposer asked every node before the offer
		// entered the log (offerReaches): one that no node would deliver
		// is refused there (cl.unreached); one in the log takes its seq
		// on every node alike and fails after, when nobody received it.
		if m.Offer && (cl.unreached || !t.replicated() && !t.reaches(r.path)) {
			return fail(reasonNoSubscriber)
		}
		if w := t.behind(r.path, false); w != nil {
			return outcome{wait: w}
		}
		if !t.room() {
			return outcome{wait: t.roomWait()}
		}
		seq := t.takeSeq()
		sent = t.emit(r.path, r.path, &a, withSeq(head, seq), seq)
		return outcome{}
	})
	if reason != "" {
		return nil, reason
	}
	cl.sent = sent
	if sent == 0 {
		return nil, reasonNoSubscriber
	}
	b := replyStart(m.MsgID, 24)
	b = strconv.AppendInt(append(b, `,"sent_count":`...), int64(sent), 10)
	return append(b, '}'), ""
}

// mayListen returns why cl may not subscribe to path ("" when it may),
// t.mu held. A SUBSCRIBE is judged as a read would be (see seen): on a
// resource the caller may not read it answers what it answers where no
// resource is, and then delivers nothing about it (each notification is
// judged at delivery). It needs the subscribe right there, or for a
// stream (a GET kept open) the read right, denied as a read is.
func (t *Tree) mayListen(cl *caller, path string, stream bool) string {
	if reason := t.usable(cl); reason != "" {
		return reason
	}
	if cl.identity == Admin {
		return ""
	}
	var a access
	read := t.seen(&a, cl.identity, path)
	switch {
	case stream && (read || a.allows(cl.identity, OpRead)):
		return ""
	case !stream && a.allows(cl.identity, OpSubscribe):
		return ""
	}
	return reasonForbidden
}

// mayNotify returns why cl may not NOTIFY path ("" when it may), t.mu
// held, and fills a with the access at path, which emit takes. NOTIFY
// passes data to the resource's subscribers: it needs the subscribe right
// at the resource itself, like a write.
func (t *Tree) mayNotify(cl *caller, a *access, path string) string {
	if reason := t.usable(cl); reason != "" {
		return reason
	}
	t.accessAt(a, path)
	if cl.identity != Admin && !a.allows(cl.identity, OpSubscribe) {
		return reasonForbidden
	}
	return ""
}

package auth

import (
	"context"
	"sync"
	"time"
)

// Change is an entry of a [Changer]'s log: a login record that was
// removed or given a new password, which ends its sessions. A [Notifier]
// reports two more kinds, Written and All.
type Change struct {
	Seq   int64 // the entry's place in the log, increasing
	ID    int64 // the record's id
	Email string
	Realm string
	// Written reports a new state of the record written by some process
	// (a new token after a login, a logout, a new hash), with its Hash and
	// Token: a cached copy with the same ones is kept, any other is
	// forgotten. It does not end the record's sessions by itself: a new
	// password or a removal is reported as a Change without Written.
	Written     bool
	Hash, Token string
	// All reports that any record may have changed unseen (a Notifier
	// starting to follow the changes, or following them again after it
	// lost them): every cached record is forgotten.
	All bool
}

// Changer is a [Store] that logs the changes that end sessions, whoever
// made them: this process, another process writing the same database
// (reso user remove), another server sharing the store. Every
// authenticator over the store follows the log with
// [Authenticator.Watch], so the same event reaches each of them; a store
// shared by a fleet offers the same log.
type Changer interface {
	// LastChange returns the seq of the last entry logged, 0 when none.
	LastChange(ctx context.Context) (int64, error)
	// Changes returns the entries after seq, oldest first; it may
	// return fewer than there are (the caller asks again).
	Changes(ctx context.Context, after int64) ([]Change, error)
}

// Notifier is a [Store] shared by several processes (the nodes of a
// fleet, docs/fleet.md) that reports every change of its records as it
// happens, whoever made it, so that no process trusts a copy in memory of
// what another has changed. [Authenticator.Watch] follows it.
type Notifier interface {
	// Notify calls f for each change of a record, in the order they were
	// made, from the moment it follows them until ctx ends or it can no
	// longer follow them; it returns why it stopped. Its first call of f,
	// once it follows, is a Change with All set. f is called from one
	// goroutine and must not block.
	Notify(ctx context.Context, f func(Change)) error
}

// DefaultWatchInterval is how often [Authenticator.Watch] reads the
// store's log when its interval is 0.
const DefaultWatchInterval = 250 * time.Millisecond

// OnEnd registers f to be told the e-mail of a user whose sessions ended
// because its record was removed or given a new password, in this realm:
// its cookies and tokens are already refused when f runs, and f ends what
// the authenticator cannot, such as the user's open connections. f is
// called from one goroutine at a time and must not block. Register the
// functions before serving.
//
// With a store that is a [Changer] the events come from its log, read by
// [Authenticator.Watch], whoever made the change; with another store,
// from this authenticator's own [Authenticator.Remove] and
// [Authenticator.Register].
func (a *Authenticator) OnEnd(f func(email string)) {
	a.emu.Lock()
	a.onEnd = append(a.onEnd, f)
	a.emu.Unlock()
}

// ended tells the OnEnd functions that the sessions of email ended, once
// the end is logged for EndedSince.
func (a *Authenticator) ended(email string) {
	a.emu.Lock()
	defer a.emu.Unlock()
	a.ends.add(email)
	for _, f := range a.onEnd {
		f(email)
	}
}

// endedHere reports the end of email's sessions made by this
// authenticator when no log will report it.
func (a *Authenticator) endedHere(email string) {
	if _, ok := a.store.(Changer); !ok {
		a.ended(email)
	}
}

// Watch follows the log of a store that is a [Changer] until ctx ends,
// reading it every interval (0: [DefaultWatchInterval]): for each record
// of this realm removed or given a new password, by any writer, it forgets
// the record (so its cookies and tokens are checked against the store,
// which refuses them) and tells the [Authenticator.OnEnd] functions. Read
// errors are retried at the next tick; it returns ctx's error.
//
// With a store that is a [Notifier] it follows its changes as they come
// instead: besides the ends, every record written by another process is
// forgotten unless the copy in memory is already the written one. When
// the store stops following, Watch starts it again after interval. With
// another store it returns nil at once.
func (a *Authenticator) Watch(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	if n, ok := a.store.(Notifier); ok {
		return a.follow(ctx, n, interval)
	}
	ch, ok := a.store.(Changer)
	if !ok {
		return nil
	}
	last, err := ch.LastChange(ctx)
	for err != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
		last, err = ch.LastChange(ctx)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		for {
			cs, err := ch.Changes(ctx, last)
			if err != nil || len(cs) == 0 {
				break
			}
			for _, c := range cs {
				last = c.Seq
				if c.Realm != a.realm {
					continue
				}
				a.cache.drop(c.ID)
				a.ended(c.Email)
			}
		}
	}
}

// follow runs n.Notify until ctx ends, again after interval whenever it
// stops.
func (a *Authenticator) follow(ctx context.Context, n Notifier, interval time.Duration) error {
	for {
		_ = n.Notify(ctx, a.changed)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// changed applies a change reported by a [Notifier] to the records in
// memory and tells the OnEnd functions of an end in this realm.
func (a *Authenticator) changed(c Change) {
	switch {
	case c.All:
		a.cache.clear()
	case c.Written:
		a.cache.keepIf(c.ID, func(rec LoginRecord) bool { return rec.Hash == c.Hash && rec.Token == c.Token })
	default:
		a.cache.drop(c.ID)
		if c.Realm == a.realm && c.Email != "" {
			a.ended(c.Email)
		}
	}
}

// endLogSize is how many ends an [Authenticator] remembers for
// EndedSince.
const endLogSize = 1024

// endLog is the log of the latest ends of sessions (their e-mails), for
// [Authenticator.EndedSince]: a ring of endLogSize entries, the end
// numbered n (from 1) at n % endLogSize.
type endLog struct {
	mu     sync.Mutex
	n      uint64 // the ends logged
	emails [endLogSize]string
}

// add logs the end of email's sessions.
func (l *endLog) add(email string) {
	l.mu.Lock()
	l.n++
	l.emails[l.n%endLogSize] = email
	l.mu.Unlock()
}

// mark returns the number the next end will get.
func (l *endLog) mark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n + 1
}

// since reports whether email's sessions ended with an end numbered mark
// or later; when the ring no longer holds them all it reports true.
func (l *endLog) since(email string, mark uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if mark == 0 || l.n < mark {
		return false
	}
	if l.n-mark >= endLogSize {
		return true
	}
	for n := mark; n <= l.n; n++ {
		if l.emails[n%endLogSize] == email {
			return true
		}
	}
	return false
}

// EndedSince reports whether the sessions of email ended (a removal or a
// new password, told to the [Authenticator.OnEnd] functions) after the
// check that gave the identity its mark, [core.Identity].Checked: a
// connection that the identity opens once the OnEnd functions have run
// for that end must be ended by whoever opens it. It reports false for the
// mark 0 (unknown), and true when more than 1,024 ends came after the
// mark, which it no longer remembers one by one.
//
// The end is logged before the OnEnd functions run, so a connection that
// is registered where they look and then finds EndedSince false is found
// by them.
func (a *Authenticator) EndedSince(email string, mark uint64) bool {
	return a.ends.since(email, mark)
}

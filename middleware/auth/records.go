package auth

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Lookup of login records, from memory when they are there, and the writes
// of a new token. Reads get the request's context; writes run to their end.

// writeTimeout bounds a store write. A write runs to its end (or this
// limit) even when the request that started it is cancelled, so that a
// client that goes away never leaves a token half-changed.
const writeTimeout = 10 * time.Second

// writeContext returns the context of a store write: the values of ctx,
// without its cancellation, and with [writeTimeout].
func writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
}

// readError returns the error of a store read: the context's own error when
// ctx ended (the client went away; no server failure), else err.
func readError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, ErrNoRecord) {
		return cerr
	}
	return err
}

// byID returns the record with the given id: its copy in memory when there
// is one and want accepts it (a nil want accepts any), else the store's.
// A copy in memory that want refuses is read again from the store before
// the caller refuses the credentials it was checked against: another
// process sharing the store (another node of a fleet) may have changed
// the record since, and the credentials may be its new ones. Refused
// credentials thus cost one store read, as a record not in memory does.
func (a *Authenticator) byID(ctx context.Context, id int64, want func(LoginRecord) bool) (LoginRecord, error) {
	if rec, ok := a.cache.id(id); ok && (want == nil || want(rec)) {
		return rec, nil
	}
	gen := a.cache.generation()
	rec, err := a.store.ByID(ctx, id)
	if err != nil {
		return LoginRecord{}, readError(ctx, err)
	}
	a.cache.fill(gen, rec)
	return rec, nil
}

// byEmail returns the record of email in the realm, from memory when it is
// there and want accepts it, as byID does.
func (a *Authenticator) byEmail(ctx context.Context, email string, want func(LoginRecord) bool) (LoginRecord, error) {
	if rec, ok := a.cache.email(email); ok && (want == nil || want(rec)) {
		return rec, nil
	}
	gen := a.cache.generation()
	rec, err := a.store.ByEmail(ctx, email, a.realm)
	if err != nil {
		return LoginRecord{}, readError(ctx, err)
	}
	a.cache.fill(gen, rec)
	return rec, nil
}

// errStale is the error of issue when the record's hash in the store is no
// longer the one of rec: another process gave it a new password since rec
// was read.
var errStale = errors.New("auth: the record has a new password")

// issue stores a new token for rec and returns the record with it. Tokens
// have a resolution of one second, so a token issued again within the same
// second is the stored one and costs no write.
func (a *Authenticator) issue(ctx context.Context, rec LoginRecord) (LoginRecord, error) {
	token := makeToken(a.secret, rec.ID, a.now())
	if token == rec.Token {
		return rec, nil
	}
	ctx, cancel := writeContext(ctx)
	defer cancel()
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if g, ok := a.store.(TokenGuard); ok {
		set, err := g.SetTokenIfHash(ctx, rec.ID, rec.Hash, token)
		if err == nil && !set {
			err = errStale
		}
		if err != nil {
			a.cache.drop(rec.ID)
			return LoginRecord{}, err
		}
	} else if err := a.store.SetToken(ctx, rec.ID, token); err != nil {
		return LoginRecord{}, err
	}
	rec.Token = token
	a.cache.setToken(rec)
	return rec, nil
}

// parseID parses a record id: decimal digits only, at most 18 of them.
func parseID(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

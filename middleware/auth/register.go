package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Register registers email with password in the authenticator's realm and
// issues a token; it returns the record id. Registering an existing e-mail
// updates its hash and issues a new token, which ends the sessions of the old
// password; registering it again with the same password changes nothing, so
// a server that registers its users at every start keeps their sessions. The
// empty password is allowed (it is the default).
func (a *Authenticator) Register(ctx context.Context, email, password string) (int64, error) {
	return a.RegisterHash(ctx, email, HashPassword(email, a.realm, password))
}

// RegisterHash is like [Authenticator.Register] with the hash precomputed:
// 32 hex characters of MD5 over <email>:<realm>:<password>.
func (a *Authenticator) RegisterHash(ctx context.Context, email, hash string) (int64, error) {
	if err := validEmail(email); err != nil {
		return 0, err
	}
	if len(hash) != hashLen || !isHex(hash) {
		return 0, fmt.Errorf("auth: register %q: hash is not 32 hex characters", email)
	}
	hash = strings.ToLower(hash)
	a.wmu.Lock()
	defer a.wmu.Unlock()
	old, err := a.store.ByEmail(ctx, email, a.realm)
	switch {
	case err == nil && old.Hash == hash && validToken(a.secret, old.ID, old.Token):
		// Registered before with this password (a server restarting with
		// the same -login): the current session stays valid.
		a.cache.put(old)
		return old.ID, nil
	case err != nil && !errors.Is(err, ErrNoRecord):
		return 0, readError(ctx, err)
	}
	existed := err == nil && old.Hash != hash
	// From here on the registration is a write that runs to its end.
	ctx, cancel := writeContext(ctx)
	defer cancel()
	id, err := a.store.Register(ctx, email, a.realm, hash)
	if err != nil {
		return 0, err
	}
	if id <= 0 {
		return 0, fmt.Errorf("auth: register %q: store returned id %d", email, id)
	}
	rec := LoginRecord{ID: id, Email: email, Realm: a.realm, Hash: hash, Token: makeToken(a.secret, id, a.now())}
	for at := a.now(); existed && rec.Token == old.Token; {
		// A token is its record's and its second's: issued in the same
		// second as the old one, it would keep the old sessions.
		at = at.Add(time.Second)
		rec.Token = makeToken(a.secret, id, at)
	}
	if err := a.store.SetToken(ctx, id, rec.Token); err != nil {
		a.cache.drop(id)
		return 0, err
	}
	a.cache.put(rec)
	if existed {
		// A new password for an existing record: its sessions ended.
		a.endedHere(email)
	}
	return id, nil
}

// validEmail checks an e-mail for registration: not empty, not the
// administrator's, and usable as a Basic and Digest user name (no colon, no
// control characters).
func validEmail(email string) error {
	switch {
	case email == "":
		return errors.New("auth: register: empty e-mail")
	case email == AdminEmail:
		return errors.New("auth: register: the administrator has no record")
	case len(email) > 320:
		return errors.New("auth: register: e-mail too long")
	}
	for i := 0; i < len(email); i++ {
		if c := email[i]; c < ' ' || c == 0x7f || c == ':' {
			return fmt.Errorf("auth: register %q: e-mail with a colon or a control character", email)
		}
	}
	return nil
}

// ParseLogin splits the EMAIL:PASSWORD of a -login flag at the first colon;
// the password may contain colons.
func ParseLogin(s string) (email, password string, err error) {
	email, password, ok := strings.Cut(s, ":")
	if !ok || email == "" {
		return "", "", fmt.Errorf("auth: login %q: want EMAIL:PASSWORD", s)
	}
	return email, password, nil
}

package auth

import (
	"context"
	"errors"
	"fmt"
)

// Lister is a [Store] that can list its records, for user management.
type Lister interface {
	// List returns the records of realm ordered by id.
	List(ctx context.Context, realm string) ([]LoginRecord, error)
}

// Remover is a [Store] that can delete a record, for user management.
type Remover interface {
	// Remove deletes the record of email in realm and returns its id, or
	// returns [ErrNoRecord].
	Remove(ctx context.Context, email, realm string) (int64, error)
}

// Users returns the login records of the authenticator's realm, ordered by
// id. The store must implement [Lister].
func (a *Authenticator) Users(ctx context.Context) ([]LoginRecord, error) {
	l, ok := a.store.(Lister)
	if !ok {
		return nil, errors.New("auth: the store cannot list its records")
	}
	return l.List(ctx, a.realm)
}

// Lookup returns the login record of email in the authenticator's realm, or
// [ErrNoRecord].
func (a *Authenticator) Lookup(ctx context.Context, email string) (LoginRecord, error) {
	return a.store.ByEmail(ctx, email, a.realm)
}

// Remove deletes the login record of email: its sessions end at once in this
// process, and in every process that watches the store
// ([Authenticator.Watch]), which tells its [Authenticator.OnEnd] functions. It returns [ErrNoRecord] when there is none.
// The store must implement [Remover].
func (a *Authenticator) Remove(ctx context.Context, email string) error {
	r, ok := a.store.(Remover)
	if !ok {
		return errors.New("auth: the store cannot remove records")
	}
	a.wmu.Lock()
	defer a.wmu.Unlock()
	id, err := r.Remove(context.WithoutCancel(ctx), email, a.realm)
	if err != nil {
		if errors.Is(err, ErrNoRecord) {
			return err
		}
		return fmt.Errorf("auth: remove %q: %w", email, err)
	}
	a.cache.drop(id)
	a.endedHere(email)
	return nil
}

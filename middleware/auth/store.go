package auth

import (
	"context"
	"errors"
	"net/http"

	"github.com/reso-project/reso/core"
)

// LoginRecord is a login record of the authenticator
// (docs/wire.md#login-records).
type LoginRecord struct {
	// ID is the primary key, assigned on registration; 0 is reserved for
	// the administrator, who has no stored record.
	ID int64
	// Email is the login name (the Basic and Digest user name).
	Email string
	// Realm is the authentication realm of the record.
	Realm string
	// Hash is the lower-case hex MD5 of <email>:<realm>:<password>, the
	// HA1 of HTTP Digest.
	Hash string
	// Token is the current session token of 42 characters, or "" when the
	// record is logged out.
	Token string
}

// ErrNoRecord is returned by a [Store] when no record matches.
var ErrNoRecord = errors.New("auth: no such login record")

// ErrUnavailable is what a [Store] wraps in the error of an operation it
// could not complete for now, its backend unreachable or too slow to
// answer in time: the request is then answered 503 Login Store
// Unavailable, which a client may retry, not 500 Internal Server Error.
var ErrUnavailable = core.Status(http.StatusServiceUnavailable, "Login Store Unavailable")

// Store keeps login records. Implementations must be safe for concurrent
// use. The authenticator calls the writing methods (Register, SetToken,
// ClearToken) with a context that is not cancelled with the request but
// has a time limit, so that a write, once started, runs to its end; reads
// get the request's context and should return its error when it ends. The authenticator keeps the records it has verified in memory and
// writes every change through the store, so a store shared by several
// servers sees every change, while each server trusts its own memory for the
// records it has seen.
type Store interface {
	// Register creates the record of email and realm with the given hash
	// and an empty token, or updates the hash of the existing one, and
	// returns its id. A new hash empties the token in the same write, so
	// that no process accepts the old sessions of a record that has the
	// new password.
	Register(ctx context.Context, email, realm, hash string) (int64, error)
	// ByID returns the record with the given id, or [ErrNoRecord].
	ByID(ctx context.Context, id int64) (LoginRecord, error)
	// ByEmail returns the record of email in realm, or [ErrNoRecord].
	ByEmail(ctx context.Context, email, realm string) (LoginRecord, error)
	// SetToken stores token as the token of record id, or returns
	// [ErrNoRecord].
	SetToken(ctx context.Context, id int64, token string) error
	// ClearToken empties the token of record id when it equals token and
	// reports whether it did.
	ClearToken(ctx context.Context, id int64, token string) (bool, error)
	// Close releases the store.
	Close() error
}

// TokenGuard is a [Store] that writes the token of a login only while the
// record still has the hash the login's credentials were checked against.
// A login checked against a copy in memory older than a new password set
// by another process (a fleet's node, reso user) then issues no session
// under the new password: the authenticator refuses it instead.
type TokenGuard interface {
	// SetTokenIfHash stores token as the token of record id if its hash
	// is hash, and reports whether it did; [ErrNoRecord] when there is no
	// record id.
	SetTokenIfHash(ctx context.Context, id int64, hash, token string) (bool, error)
}

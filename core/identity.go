package core

import "context"

// Identity is an authenticated caller.
type Identity struct {
	ID    int64
	Email string
}

type identityKey struct{}

// NewIdentityContext returns a copy of ctx that carries the caller's
// identity. Authentication middleware (auth.Required, auth.Optional) calls it
// once the caller is known; it is the one place an identity is kept.
func NewIdentityContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFromContext returns the identity stored in ctx by
// [NewIdentityContext], or nil for an anonymous caller.
func IdentityFromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

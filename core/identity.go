package core

import "context"

// Identity is an authenticated caller.
type Identity struct {
	ID    int64
	Email string
	// Checked is the mark of the authenticator's ended sessions at the
	// moment it checked the caller's credentials (see reso's
	// auth.Authenticator.EndedSince): a connection that starts with an
	// identity checked before its user's sessions ended is ended too. 0
	// when unknown (an identity set by other middleware).
	Checked uint64
}

type identityKey struct{}

// NewIdentityContext returns a copy of ctx that carries the caller's
// identity. It is the one function that tells reso who the caller is:
// reso's authentication middleware (auth.Required, auth.Optional) calls it
// once the caller is known, and so does an embedding server's own
// middleware, before the doors and plugins it mounts:
//
//	next.ServeHTTP(w, r.WithContext(core.NewIdentityContext(r.Context(), &core.Identity{ID: 7, Email: "ann@example.com"})))
//
// The request the router is routing with ctx, if any, gets the same
// identity in its [Request].Identity, so that the two always agree.
func NewIdentityContext(ctx context.Context, id *Identity) context.Context {
	if req := FromContext(ctx); req != nil {
		req.Identity = id
	}
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFromContext returns the identity stored in ctx by
// [NewIdentityContext], or nil for an anonymous caller.
func IdentityFromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

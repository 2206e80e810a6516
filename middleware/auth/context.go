package auth

import (
	"context"

	"github.com/reso-project/reso/core"
)

type identityKey struct{}

// NewContext returns a copy of ctx that carries the authenticated identity.
func NewContext(ctx context.Context, id *core.Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the identity stored in ctx by [NewContext] (as
// [Required] does), or nil.
func FromContext(ctx context.Context) *core.Identity {
	id, _ := ctx.Value(identityKey{}).(*core.Identity)
	return id
}

package app

import (
	"context"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/middleware/auth"
	"github.com/reso-project/reso/plugins"
)

// endedTree is the tree as the host offers it (plugins.Services.Tree),
// which ends a client whose caller's sessions ended (a removal, a new
// password) between the check of its credentials and its connection: the
// OnEnd function (tree.EndIdentity) ran before the client was there to be
// found, so without this check the connection would outlive the change.
type endedTree struct {
	plugins.Tree
	end func(id string) // ends the client id with 1008 "session ended" (channel.Tree.EndSession)
	a   *auth.Authenticator
}

// Connect connects the client, then ends it when the identity in ctx (the
// caller's, with the mark of its check) was checked before an end of its
// sessions.
func (t endedTree) Connect(ctx context.Context, id, identity string) (plugins.TreeClient, error) {
	c, err := t.Tree.Connect(ctx, id, identity)
	if err != nil {
		return nil, err
	}
	if who := core.IdentityFromContext(ctx); who != nil && who.Email == identity && t.a.EndedSince(identity, who.Checked) {
		t.end(id)
	}
	return c, nil
}

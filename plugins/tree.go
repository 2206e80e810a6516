package plugins

import "github.com/reso-project/reso/core"

// Admin is the identity of the tree's administrator, who may do everything
// everywhere (docs/channel.md#operations-and-callers; in the tree's own
// package it is channel.Admin, the same string). A plugin that acts for
// the application itself, not for a caller, passes it to [Tree].Connect or
// [Tree].Call; a door gives it to the administrator alone.
const Admin = "admin"

// The tree's types are core's (core/tree.go), so that the doors, a
// library the bundled plugins share (package doors), need not import the
// contract; here they keep the names a plugin knows them by.
type (
	// Tree is the host service of the resource tree: see [core.Tree].
	Tree = core.Tree
	// TreeClient is one client attached to the [Tree]: see
	// [core.TreeClient].
	TreeClient = core.TreeClient
	// TreeFrame is one message the tree sends a client: see
	// [core.TreeFrame].
	TreeFrame = core.TreeFrame
	// TreeGone is why the tree disconnected a client: see [core.TreeGone].
	TreeGone = core.TreeGone
)

package channel

import "context"

// StoredResource is one persistent resource as a [Store] keeps it. A node
// that exists only because it has persistent children is stored too, with a
// nil Entity, so that its place among its siblings survives a restart.
type StoredResource struct {
	Path    string   // "/a/b"
	Type    string   // media type; "" for a node without entity
	Entity  []byte   // raw compact JSON, field order as given; nil for a node without entity
	Creator string   // identity of the creator (the owner), "" anonymous
	Rule    string   // its own rule text (docs/channel.md#the-rule-text); "" none
	Group   []string // the group of its subtree; nil none, empty a group without members
	Created uint64   // seq of its creation: children are listed in creation order
}

// Store keeps the persistent resources of a [Tree] and a mark that no
// seq the tree hands out passes. The tree calls Save from one goroutine
// at a time (its committer), with the records of a batch of changes
// (group commit), and applies those changes (makes them visible, sends
// their notifications, then the replies) only once Save returned nil; a
// Save that fails drops the batch, as if its messages had never come. So
// a Store that replicates (a log every node applies in its order) only
// has to return from Save once the batch is in the log.
type Store interface {
	// Load returns every record and the last mark saved.
	Load(ctx context.Context) (records []StoredResource, lastSeq uint64, err error)
	// Save replaces or adds puts, removes the records at the paths in
	// deletes and records the mark lastSeq, all in one transaction: all
	// of it is kept, or none.
	Save(ctx context.Context, lastSeq uint64, puts []StoredResource, deletes []string) error
}

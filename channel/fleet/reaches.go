package fleet

import (
	"bytes"
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// reachTimeout bounds the wait for the other nodes' answers to an
// offer's check: a node that has not answered by then counts as not
// reaching. A live node answers in about a millisecond; at 500 ms, nodes
// starved of CPU on a loaded 2-core machine missed it (a SEND to a target
// with a session on them answered 202 Accepted: docs/call.md).
const reachTimeout = 2 * time.Second

// reachSubject is where a node asks the others whether they would
// deliver an offer.
func (f *Fleet) reachSubject() string {
	return "reso." + f.cfg.Name + ".reaches"
}

// Reaches implements [channel.Log]: it asks the other live nodes (a core
// NATS request, no log entry) whether one of them has a subscriber that
// would receive a notification of path, and returns true at the first
// that has; false when none has, or none answered within reachTimeout.
// The request is this node's id and the path on two lines; each answer
// is the answering node's id, a space and 1 or 0.
func (f *Fleet) Reaches(ctx context.Context, path string) bool {
	want := make(map[string]bool)
	for _, n := range f.Live() {
		if n != f.node {
			want[n] = true
		}
	}
	if len(want) == 0 {
		return false
	}
	inbox := f.nc.NewInbox()
	sub, err := f.nc.SubscribeSync(inbox)
	if err != nil {
		return false
	}
	defer sub.Unsubscribe()
	if err := f.nc.PublishRequest(f.reachSubject(), inbox, []byte(f.node+"\n"+path)); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	for len(want) > 0 {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return false
		}
		node, ans, ok := bytes.Cut(m.Data, []byte{' '})
		if !ok || !want[string(node)] {
			continue // a node taken for dead, or no answer of ours
		}
		if string(ans) == "1" {
			return true
		}
		delete(want, string(node))
	}
	return false
}

// onReaches answers another node's check of an offer from this node's
// tree (read-only).
func (f *Fleet) onReaches(m *nats.Msg) {
	from, path, ok := bytes.Cut(m.Data, []byte{'\n'})
	if !ok || string(from) == f.node || m.Reply == "" {
		return
	}
	ans := " 0"
	if f.tree.Reaches(string(path)) {
		ans = " 1"
	}
	_ = m.Respond([]byte(f.node + ans))
}

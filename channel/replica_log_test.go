package channel

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// heldLog is a Log that keeps what is proposed until the test plays it
// with Tree.Apply: it says at once that the log holds each entry.
type heldLog struct {
	mu      sync.Mutex
	entries [][]byte
}

func (l *heldLog) Propose(_ context.Context, entry []byte, stored func(error)) {
	l.mu.Lock()
	l.entries = append(l.entries, entry)
	l.mu.Unlock()
	stored(nil)
}

// take returns the entries proposed since the last take.
func (l *heldLog) take() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	es := l.entries
	l.entries = nil
	return es
}

func (l *heldLog) Barrier(context.Context) (uint64, error) { return 0, nil }
func (l *heldLog) Report(string, []Count)                  {}
func (l *heldLog) Gather(context.Context, string) int      { return 0 }
func (l *heldLog) Reaches(context.Context, string) bool    { return false }

// nextFrames waits (bounded) for c's next frames, as strings.
func nextFrames(t *testing.T, c *Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fs, err := c.Next(ctx, nil)
	if err != nil {
		t.Fatalf("no frame for %s: %v", c.id, err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Data))
	}
	return out
}

// TestFleetWriteOwnsItsMessage: a node plays its own connection's write
// with the message the proposer parsed, not parsed again, and what that
// message shares of the caller's bytes (a NOTIFY's data) is the entry's
// copy: the caller may reuse its buffer once Exec returns, before the
// entry comes back from the log.
func TestFleetWriteOwnsItsMessage(t *testing.T) {
	l := &heldLog{}
	tr := newTree(t, nil, Options{Log: l, Node: "n1"})
	ctx := context.Background()
	sub, c := connect(t, tr, "sub", ""), connect(t, tr, "c", "")
	sub.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/n","msg_id":1}`))
	if fs := nextFrames(t, sub); len(fs) != 1 || !strings.Contains(fs[0], `"code":"success"`) {
		t.Fatalf("SUBSCRIBE: %q", fs)
	}
	msg := []byte(`{"method":"NOTIFY","resource":"/n","data":{"v":"original"},"msg_id":2}`)
	c.Exec(ctx, msg)
	copy(msg, bytes.Repeat([]byte{'x'}, len(msg))) // the door reuses its buffer
	es := l.take()
	if len(es) != 1 {
		t.Fatalf("%d entries proposed, want 1", len(es))
	}
	tr.Apply(1, Batch{Node: "n1", N: 1, Entries: es})
	fs := nextFrames(t, sub)
	if len(fs) != 1 || !strings.Contains(fs[0], `"data":{"v":"original"}`) {
		t.Fatalf("the subscriber got %q, want the NOTIFY with the data sent", fs)
	}
	if fs := nextFrames(t, c); len(fs) != 1 || !strings.Contains(fs[0], `"sent_count":1`) {
		t.Fatalf("the NOTIFY's reply: %q", fs)
	}
}

// TestPlayOwnEntryWithoutProposer: an entry of this node whose proposer
// no longer waits (it gave up, or the node restarted under the same id)
// is parsed at its play, and played as on every other node.
func TestPlayOwnEntryWithoutProposer(t *testing.T) {
	tr := newTree(t, nil, Options{Log: idleLog{}, Node: "n1"})
	e := entry{V: entryVersion, K: kindMsg, P: proposalID(), Node: "n1", Call: true,
		Msg: []byte(`{"method":"PUT","resource":"/x","entity":{"on":true}}`)}
	tr.Apply(1, Batch{Node: "n1", N: 1, Entries: [][]byte{e.encode()}})
	tr.mu.RLock()
	n := tr.lookup("/x")
	tr.mu.RUnlock()
	if n == nil || string(n.entity()) != `{"on":true}` || !n.persist() {
		t.Fatalf("/x after the play: %+v", n)
	}
}

// TestRebase: a slice of the caller's bytes moves to the same place of
// the copy; anything else stays.
func TestRebase(t *testing.T) {
	raw := []byte(`{"data":[1,2]}`)
	cp := bytes.Clone(raw)
	got := rebase(raw[8:13], raw, cp)
	if string(got) != "[1,2]" || &got[0] != &cp[8] {
		t.Fatalf("rebase of a slice of raw: %q, not in the copy", got)
	}
	other := []byte("[1,2]")
	if got := rebase(other, raw, cp); &got[0] != &other[0] {
		t.Fatal("rebase moved a slice of other bytes")
	}
	if got := rebase(nil, raw, cp); got != nil {
		t.Fatalf("rebase of nil: %q", got)
	}
}

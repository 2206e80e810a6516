package channel

import (
	"context"
	"testing"
	"time"
)

// TestStateWithoutLock: State answers while an apply holds the tree's
// lock (a heartbeat must not wait behind a fan-out to thousands of
// subscribers), with the position, seq and hash the last apply left.
func TestStateWithoutLock(t *testing.T) {
	tr, err := New(context.Background(), nil, Options{Log: idleLog{}, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	e := entry{V: entryVersion, K: kindMsg, Node: remoteNode, P: proposalID(), Conn: "c1", From: "c1",
		Msg: []byte(`{"method":"PUT","resource":"/s","entity":{"on":true}}`)}
	tr.Apply(1, Batch{Node: remoteNode, N: 1, Entries: [][]byte{e.encode()}})
	tr.mu.RLock()
	want := appliedState{tr.applied, tr.seq, tr.hash}
	tr.mu.RUnlock()
	if want.applied != 1 || want.seq == 0 || want.hash == 0 {
		t.Fatalf("after one apply: %+v", want)
	}

	tr.mu.Lock() // as an apply does
	got := make(chan appliedState, 1)
	go func() {
		a, s, h := tr.State()
		got <- appliedState{a, s, h}
	}()
	select {
	case g := <-got:
		tr.mu.Unlock()
		if g != want {
			t.Fatalf("State() = %+v, want %+v", g, want)
		}
	case <-time.After(time.Minute): // a hang guard, not a timing
		tr.mu.Unlock()
		t.Fatal("State waited for the tree's lock")
	}
}

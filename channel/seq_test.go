package channel

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
)

// snapshot returns a store holding what s holds now: the disk of a server
// that crashed at this moment.
func (s *memStore) snapshot() *memStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &memStore{recs: maps.Clone(s.recs), lastSeq: s.lastSeq}
}

// TestSeqAfterCrash: seqs handed out for transient changes, which never
// reach the store, are not handed out again after a crash, and a client
// that saw them is told that its "since" was not recovered.
func TestSeqAfterCrash(t *testing.T) {
	ctx := context.Background()
	st := newMemStore()
	a, err := New(ctx, st, Options{Epoch: "e"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ca := connect(t, a, "a", "")
	ca.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/t","msg_id":1}`))
	for range 3 {
		ca.Exec(ctx, []byte(`{"method":"PUT","resource":"/t","entity":{"n":1}}`))
	}
	var last uint64
	for _, f := range drain(t, ca) {
		last = max(last, seqOf(f))
	}
	if last == 0 {
		t.Fatal("no notification seen")
	}

	// The server crashes: a restarts on what the store held, unclosed.
	b, err := New(ctx, st.snapshot(), Options{Epoch: "e"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cb := connect(t, b, "b", "")
	cb.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/t","msg_id":1,"since":`+strconv.FormatUint(last, 10)+`}`))
	cb.Exec(ctx, []byte(`{"method":"NOTIFY","resource":"/t","data":1,"msg_id":2}`))
	got := drain(t, cb)
	if len(got) != 3 || got[0] != `{"msg_id":1,"code":"success","recovered":false,"epoch":"e"}` {
		t.Fatalf("after the crash: %q", got)
	}
	if seq := seqOf(got[1]); seq <= last {
		t.Errorf("seq %d after the crash, not above %d handed out before it", seq, last)
	}
}

// seqOf returns the seq of a notification frame, 0 for another frame.
func seqOf(frame string) uint64 {
	_, rest, ok := strings.Cut(frame, `"seq":`)
	if !ok {
		return 0
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	n, _ := strconv.ParseUint(rest[:end], 10, 64)
	return n
}

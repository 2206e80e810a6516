package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// idleLog is a Log that is never asked anything: the tests here feed the
// tree with Apply, as the fleet's consumer does.
type idleLog struct{}

func (idleLog) Propose(_ context.Context, _ []byte, stored func(error)) { stored(ErrUnavailable) }
func (idleLog) Barrier(context.Context) (uint64, error)                 { return 0, ErrUnavailable }
func (idleLog) Report(string, []Count)                                  {}
func (idleLog) Gather(context.Context, string) int                      { return 0 }
func (idleLog) Reaches(context.Context, string) bool                    { return false }

// fleetTree returns a new tree of a fleet, as node "n1", restored from a
// snapshot of size resources under /s/<i>, each with a small entity.
func fleetTree(tb testing.TB, size int) *Tree {
	tb.Helper()
	t, err := New(context.Background(), nil, Options{Log: idleLog{}, Node: "n1"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { t.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, `{"v":%d,"pos":%d,"seq":%d,"lease":0}`+"\n", entryVersion, size+1, size+1)
	b.WriteString(`{"path":"/s","created":1}` + "\n")
	for i := range size {
		fmt.Fprintf(&b, `{"path":"/s/r%d","type":"application/json","entity":{"i":%d,"name":"resource %d"},"creator":"alice","created":%d,"persist":true}`+"\n", i, i, i, i+2)
	}
	if _, err := t.Restore(strings.NewReader(b.String())); err != nil {
		tb.Fatal(err)
	}
	return t
}

// putEntry returns a batch of one entry: an HTTP PUT of /s/<name> by
// node "n0".
func putEntry(name string, i int) Batch {
	e := entry{V: entryVersion, K: kindMsg, P: fmt.Sprint("p", i), Node: "n0", Who: "alice", Call: true, At: 1764080000000,
		Msg: []byte(fmt.Sprintf(`{"method":"PUT","resource":"/s/%s","entity":{"i":%d},"persistent":true}`, name, i))}
	return Batch{Entries: [][]byte{e.encode()}}
}

// snapshotOf returns the snapshot of t.
func snapshotOf(tb testing.TB, t *Tree) []byte {
	tb.Helper()
	var b bytes.Buffer
	if _, err := t.Snapshot(&b); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// TestSnapshotUnderApply: a snapshot frozen between two applies and
// written while the next ones are applied is the state at exactly the
// position it names: a tree restored from it that
// applies the entries after that position reaches the same state as the
// tree it was taken from.
func TestSnapshotUnderApply(t *testing.T) {
	const size, updates = 5000, 3000
	tr := fleetTree(t, size)
	first := tr.Applied() + 1
	entries := make([]Batch, updates)
	for i := range entries {
		name := fmt.Sprint("r", (i*7)%size) // updates of existing resources
		if i%3 == 0 {
			name = fmt.Sprint("new", i) // and new ones
		}
		entries[i] = putEntry(name, i)
	}
	// Frozen between two applies, as the fleet's consumer does; written
	// while the next ones are applied.
	var snap bytes.Buffer
	var pos uint64
	var wg sync.WaitGroup
	for i, e := range entries {
		if i == updates/3 {
			f := tr.Freeze(tr.PrepareFreeze())
			pos = f.Pos()
			wg.Go(func() {
				if _, err := f.WriteTo(&snap); err != nil {
					t.Error(err)
				}
			})
		}
		tr.Apply(first+uint64(i), e)
	}
	wg.Wait()
	if pos != first+updates/3-1 {
		t.Fatalf("snapshot at %d, want %d", pos, first+updates/3-1)
	}

	again, err := New(context.Background(), nil, Options{Log: idleLog{}, Node: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if p, err := again.Restore(&snap); err != nil || p != pos {
		t.Fatalf("Restore = %d, %v; want %d", p, err, pos)
	}
	for p := pos + 1; p < first+updates; p++ {
		again.Apply(p, entries[p-first])
	}
	if a, b := snapshotOf(t, tr), snapshotOf(t, again); !bytes.Equal(a, b) {
		la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
		for i := range min(len(la), len(lb)) {
			if !bytes.Equal(la[i], lb[i]) {
				t.Fatalf("the restored tree differs after the same entries: line %d\n%s\n%s", i+1, la[i], lb[i])
			}
		}
		t.Fatalf("the restored tree differs after the same entries: %d and %d lines", len(la), len(lb))
	}
}

// BenchmarkSnapshotStall snapshots a tree of 100,000 resources while
// entries are applied one after the other, as the fleet's consumer does
// (Freeze between two applies, then the encoding beside them), and
// reports the longest wait of the applies (max-apply-ms), the larger of
// the copy (freeze-ms) and of the longest apply during the encoding
// (apply-during-ms), the longest of as many applies without a snapshot
// (apply-alone-ms: the machine's noise), and the snapshot's own time
// (snapshot-ms).
//
//	go test ./channel -run '^$' -bench SnapshotStall -benchtime 5x
func BenchmarkSnapshotStall(b *testing.B) {
	tr := fleetTree(b, 100_000)
	pos := tr.Applied()
	i := 0
	apply := func() time.Duration {
		pos++
		i++
		e := putEntry(fmt.Sprint("r", i%100_000), i)
		start := time.Now()
		tr.Apply(pos, e)
		return time.Since(start)
	}
	var alone, during, frozen, snapTime time.Duration
	applies := 0
	for b.Loop() {
		room := tr.PrepareFreeze() // beside the applies, in the fleet
		start := time.Now()
		f := tr.Freeze(room)
		frozen = max(frozen, time.Since(start))
		done := make(chan time.Duration)
		go func() {
			if _, err := f.WriteTo(io.Discard); err != nil {
				b.Error(err)
			}
			done <- time.Since(start)
		}()
		for running := true; running; applies++ {
			select {
			case d := <-done:
				snapTime = max(snapTime, d)
				running = false
			default:
			}
			during = max(during, apply())
		}
	}
	b.StopTimer()
	// The same number of applies without a snapshot: the noise of the
	// machine.
	for range applies {
		alone = max(alone, apply())
	}
	b.ReportMetric(float64(max(frozen, during).Microseconds())/1000, "max-apply-ms")
	b.ReportMetric(float64(frozen.Microseconds())/1000, "freeze-ms")
	b.ReportMetric(float64(during.Microseconds())/1000, "apply-during-ms")
	b.ReportMetric(float64(alone.Microseconds())/1000, "apply-alone-ms")
	b.ReportMetric(float64(snapTime.Microseconds())/1000, "snapshot-ms")
}

// TestSnapshotLines: the snapshot's lines, written without reflection,
// are the bytes encoding/json writes for them, for every kind of node:
// with and without entity, rule, group (empty too), owner, lease, and
// strings that need escaping.
func TestSnapshotLines(t *testing.T) {
	tr, err := New(context.Background(), nil, Options{Log: idleLog{}, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ends := time.Now().Add(time.Hour).UnixMilli()
	snap := fmt.Sprintf(`{"v":%d,"pos":9,"seq":9,"lease":3}`, entryVersion) + `
{"path":"/a","created":1}
{"path":"/a/b","type":"text/plain","entity":"x\"y\\z\u2028","creator":"alice <a&b>","created":2,"persist":true}
{"path":"/a/b/é q","type":"application/json","entity":{"k":[1,{"_p":null}]},"creator":"b\"ob","created":3,"rule":"self:cruds anon:r","group":["x@y","z\u0001"],"has_group":true}
{"path":"/a/g","created":4,"group":[],"has_group":true,"rule":"auth:-"}
{"path":"/a/t","type":"application/json","entity":{},"creator":"carol","created":5,"node":"n0","conn":"ws-1"}
{"path":"/a/l","type":"application/json","entity":[1],"created":6,"lease":3,"ends":` + fmt.Sprint(ends) + `}
`
	if _, err := tr.Restore(strings.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	f := tr.Freeze(nil)
	if len(f.items) != 6 {
		t.Fatalf("%d items", len(f.items))
	}
	for _, it := range f.items {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf) // as the snapshot's encoder was
		enc.SetEscapeHTML(false)
		if err := enc.Encode(it.line()); err != nil {
			t.Fatal(err)
		}
		want := buf.Bytes()
		if got := it.appendLine(nil); !bytes.Equal(got, want) {
			t.Errorf("line\n%s\nwant\n%s", got, want)
		}
	}
}

package channel

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
)

// remoteHeapProfile names a file for the heap profile of
// TestRemoteTransientHeap, taken while its tree holds the transients:
//
//	go test ./channel -run RemoteTransientHeap -v -args -remote-heap-profile=heap.out
//	go tool pprof -sample_index=inuse_space -top heap.out
var remoteHeapProfile = flag.String("remote-heap-profile", "", "write the heap profile of TestRemoteTransientHeap to this file")

// remoteNode is the id of the other node of remoteBatch.
const remoteNode = "5f1d0c3e9a7b2468"

// remoteBatch returns the k-th batch of 64 of node remoteNode's entries
// in which connections 0 to n-1 of that node each PUT one transient
// presence entry, as the fleet's consumer hands it to Apply: each
// entry a slice of one message.
func remoteBatch(k, n int) Batch {
	var msg []byte
	for i := k * 64; i < min(k*64+64, n); i++ {
		conn := fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15)
		e := entry{V: entryVersion, K: kindMsg, P: proposalID(), Node: remoteNode, Conn: conn, From: conn,
			At:  1764080000000 + int64(i),
			Msg: fmt.Appendf(nil, `{"method":"PUT","resource":"/room/members/%s","entity":{"name":"user %d","state":"online"},"msg_id":1}`, conn, i)}
		data := e.encode()
		msg = binary.AppendUvarint(msg, uint64(len(data)))
		msg = append(msg, data...)
	}
	b := Batch{Node: remoteNode, N: uint64(k + 1)}
	for len(msg) > 0 {
		l, w := binary.Uvarint(msg)
		b.Entries = append(b.Entries, msg[w:w+int(l)])
		msg = msg[w+int(l):]
	}
	return b
}

// heapInUse returns the bytes of the live heap objects, after a
// collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestRemoteTransientHeap bounds what every node of a fleet holds for a
// transient entity of another node's connection (issue 36, docs/fleet.md
// §13): the node, its path, its entity, its entry in the tree's index,
// the record of its owner (a ghost) and the owner's entry in the ghosts'
// index. 30,000 connections of another node each create one, applied
// from the log as the consumer applies them; the history of
// notifications, bounded apart (Options.HistoryCount), is left out. The
// layout of issue 36 holds about 269 bytes each: the index of paths and
// the ghosts' index are tables of one pointer and one hash a slot
// (table.go), 26 bytes each at this size where the maps they replaced
// took about 55, a node is 96 bytes (its type and creator one interned
// pair, its children and the capacity of its entity not kept, the
// store's bookkeeping one word), a ghost 24 (its node named by the
// table that holds it, a set of several owned entities kept by the
// tree). The layouts before: 293 bytes (a node of 112, a ghost of 32),
// 325 (a node of 128, a ghost of 48), 399
// (those maps, a node of 144), and 1,004
// (a ghost was a whole Client, its owned entities a map of one, the
// ghosts one map keyed by node and connection, a node 248 bytes): see
// docs/fleet.md §13, "Issue 36".
func TestRemoteTransientHeap(t *testing.T) {
	const n, bound = 30_000, 300
	if *remoteHeapProfile != "" {
		defer func(r int) { runtime.MemProfileRate = r }(runtime.MemProfileRate)
		runtime.MemProfileRate = 1 // every allocation, for exact figures
	}
	tr, err := New(context.Background(), nil, Options{Log: idleLog{}, Node: "n1", HistoryCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	before := heapInUse()
	for k := 0; k*64 < n; k++ {
		tr.Apply(uint64(k+1), remoteBatch(k, n))
	}
	after := heapInUse()
	per := (float64(after) - float64(before)) / n
	t.Logf("%d transients of another node's connections: %.0f bytes each", n, per)
	tr.mu.RLock()
	ghosts, owned := 0, 0
	for _, gs := range tr.ghosts {
		for g := range gs.conns.all() {
			ghosts++
			for e := range tr.ownedAll(g) {
				if e.owner == g && e.entity() != nil {
					owned++
				}
			}
		}
	}
	tr.mu.RUnlock()
	if ghosts != n || owned != n {
		t.Fatalf("%d ghosts owning %d transients, want %d of each", ghosts, owned, n)
	}
	if *remoteHeapProfile != "" {
		f, err := os.Create(*remoteHeapProfile)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	if per > bound {
		t.Errorf("a transient of another node costs this one %.0f bytes of heap, above %d", per, bound)
	}
	runtime.KeepAlive(tr)
}

// TestRemoteConnectionEnd: the transients of another node's connection go
// with its end entry, however many it owns, and its ghost with them; the
// rest go with its node's death, after which the tree names no node.
func TestRemoteConnectionEnd(t *testing.T) {
	tr, err := New(context.Background(), nil, Options{Log: idleLog{}, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	pos := uint64(0)
	apply := func(es ...entry) {
		pos++
		b := Batch{Node: remoteNode, N: pos}
		for _, e := range es {
			e.V, e.Node = entryVersion, remoteNode
			if e.K == "" {
				e.K = kindMsg
			}
			b.Entries = append(b.Entries, e.encode())
		}
		tr.Apply(pos, b)
	}
	put := func(conn, path string) entry {
		return entry{P: proposalID(), Conn: conn, From: conn,
			Msg: []byte(`{"method":"PUT","resource":"` + path + `","entity":{"on":true}}`)}
	}
	exists := func(path string) bool {
		tr.mu.RLock()
		defer tr.mu.RUnlock()
		n := tr.lookup(path)
		return n != nil && n.entity() != nil
	}
	ghosts := func() int {
		tr.mu.RLock()
		defer tr.mu.RUnlock()
		k := 0
		for _, gs := range tr.ghosts {
			k += gs.conns.len()
		}
		return k
	}
	apply(put("c1", "/room/a"), put("c1", "/room/b"), put("c1", "/room/c"), put("c2", "/room/d"))
	for _, p := range []string{"/room/a", "/room/b", "/room/c", "/room/d"} {
		if !exists(p) {
			t.Fatalf("%s missing after its PUT", p)
		}
	}
	if g := ghosts(); g != 2 {
		t.Fatalf("%d ghosts, want 2", g)
	}
	apply(put("c1", "/room/b")) // a replace keeps one entry of c1's set
	apply(entry{K: kindEnd, P: proposalID(), Conn: "c1"})
	for _, p := range []string{"/room/a", "/room/b", "/room/c"} {
		if exists(p) {
			t.Errorf("%s of the ended connection is still there", p)
		}
	}
	if !exists("/room/d") {
		t.Error("/room/d of the connection still there went")
	}
	if g, ns := ghosts(), tr.Nodes(); g != 1 || len(ns) != 1 || ns[0] != remoteNode {
		t.Fatalf("%d ghosts of nodes %v after one ended, want 1 of [%s]", g, ns, remoteNode)
	}
	apply(entry{K: kindDead, P: proposalID()})
	if exists("/room/d") {
		t.Error("/room/d is still there after its node's death")
	}
	if g, ns := ghosts(), tr.Nodes(); g != 0 || ns != nil {
		t.Fatalf("%d ghosts of nodes %v after the node's death, want none", g, ns)
	}
}

// TestResetForgetsOwnedSets: a reset from a snapshot forgets the sets of
// entities of the connections it replaces (Tree.owns) and keeps one per
// connection that owns several in the snapshot.
func TestResetForgetsOwnedSets(t *testing.T) {
	tr, err := New(context.Background(), nil, Options{Log: idleLog{}, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	b := Batch{Node: remoteNode, N: 1}
	for _, path := range []string{"/room/a", "/room/b"} {
		e := entry{V: entryVersion, K: kindMsg, Node: remoteNode, P: proposalID(), Conn: "c1", From: "c1",
			Msg: []byte(`{"method":"PUT","resource":"` + path + `","entity":{"on":true}}`)}
		b.Entries = append(b.Entries, e.encode())
	}
	tr.Apply(1, b)
	var snap bytes.Buffer
	if _, err := tr.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := tr.Reset(bytes.NewReader(snap.Bytes())); err != nil {
			t.Fatal(err)
		}
	}
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	g := tr.ghostOf(remoteNode, "c1")
	if g == nil || len(tr.owns) != 1 || tr.ownedLen(g) != 2 {
		t.Fatalf("after two resets: ghost %v, sets %v, want one set of 2 for the ghost", g, tr.owns)
	}
}

package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channel/fleet/natstest"
)

// joinCut starts a node of the fleet cfg names with Join, its NATS
// connections going through a proxy to each server of cl, which the test
// drops and heals to cut the node off and let it back.
func joinCut(t *testing.T, cl *natstest.Cluster, cfg Config) (*Member, []*natstest.Proxy, *logBuffer) {
	t.Helper()
	var urls []string
	var gates []*natstest.Proxy
	for i := range 3 {
		p, err := natstest.NewProxy(cl.Addr(i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		gates = append(gates, p)
		urls = append(urls, "nats://"+p.Addr())
	}
	var buf logBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of the node cut off:\n%s", buf.String())
		}
	})
	nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	m, err := Join(ctx, nc, cfg, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		nc.Close()
	})
	return m, gates, &buf
}

// note is a notification as the tests compare them: what it says of which
// resource, without its seq.
func note(n map[string]any) string {
	for _, k := range []string{"create", "update", "delete"} {
		if v, ok := n[k]; ok {
			return fmt.Sprintf("%s %s/%v", k, n["resource"], v)
		}
	}
	return fmt.Sprintf("%v %v", n["notify"], n["resource"])
}

// notes returns note of each of c's notifications from the i-th on.
func notes(c *client, i int) []string {
	var s []string
	for _, n := range c.notes[i:] {
		s = append(s, note(n))
	}
	return s
}

// TestRejoinKeeps: a node cut off from NATS past the heartbeat timeout
// (its process alive) is taken for dead by the others, which delete its
// connections' transient resources. When it is back it applies its own
// death, rejoins under a new id, and keeps its connections: they stay
// open, their subscriptions got every notification of the fleet meanwhile,
// in seq order and with the seqs the other nodes gave them, and each
// transient resource the death deleted exists again under the new id,
// owned by the same connection, on every node; the other nodes'
// subscribers saw it deleted and then created again (UPDATE update, as a
// PUT). A connection one of whose resources was taken meanwhile cannot
// have it back: it ends with 1012 "node left the fleet", and the
// resource stays the taker's.
func TestRejoinKeeps(t *testing.T) {
	cl := natstest.Start(t, 3)
	cfg := Config{Name: fleetName(t), Heartbeat: 2 * time.Second}
	b, c := startNode(t, cl, cfg), startNode(t, cl, cfg)
	a, gates, alog := joinCut(t, cl, cfg)
	an := &node{tree: a.Tree()} // for connect
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	oldID := a.Node()

	// On a: owner owns two transient resources and watches /r and
	// /feed; taken owns one the others will take; sub watches /feed.
	owner := connect(t, an, "")
	for _, m := range []string{
		`{"method":"SUBSCRIBE","resource":"/r"}`,
		`{"method":"SUBSCRIBE","resource":"/feed"}`,
		`{"method":"PUT","resource":"/r/t0","entity":{"n":0,"_p":"x"}}`,
		`{"method":"PUT","resource":"/r/t1","type":"text/plain","entity":"one"}`,
	} {
		if r := owner.do(m); code(r) != "success" {
			t.Fatalf("%s: %v", m, r)
		}
	}
	taken := connect(t, an, "")
	if r := taken.do(`{"method":"PUT","resource":"/r/x","entity":{}}`); code(r) != "success" {
		t.Fatal(r)
	}
	sub := connect(t, an, "")
	sub.do(`{"method":"SUBSCRIBE","resource":"/feed"}`)
	// On b and c: watchers of /r, and a reference subscriber of /feed.
	var watchers []*client
	for _, n := range []*node{b, c} {
		w := connect(t, n, "")
		w.do(`{"method":"SUBSCRIBE","resource":"/r"}`)
		watchers = append(watchers, w)
	}
	ref := connect(t, b, "")
	ref.do(`{"method":"SUBSCRIBE","resource":"/feed"}`)
	owner.expect(3) // its own two PUTs, taken's
	ownerFrom := len(owner.notes)

	// The cut: the others take a for dead and delete its resources.
	for _, g := range gates {
		g.Drop()
	}
	for _, w := range watchers {
		w.expect(len(w.notes) + 3)
	}
	for !b.tree.Dead(oldID) || !c.tree.Dead(oldID) {
		if ctx.Err() != nil {
			t.Fatal("a not taken for dead")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Meanwhile the fleet goes on: /feed grows, and c takes /r/x.
	w := connect(t, b, "")
	for i := range 5 {
		if r := w.do(fmt.Sprintf(`{"method":"PUT","resource":"/feed/k%d","entity":{},"persistent":true}`, i)); code(r) != "success" {
			t.Fatal(r)
		}
	}
	if r := connect(t, c, "").do(`{"method":"PUT","resource":"/r/x","entity":{"by":"c"},"persistent":true}`); code(r) != "success" {
		t.Fatal(r)
	}

	// Back: a applies its death and rejoins under a new id.
	for _, g := range gates {
		g.Heal()
	}
	for a.Node() == oldID || a.Ready(ctx) != nil {
		if ctx.Err() != nil {
			t.Fatalf("a not rejoined and ready (node %s, ready: %v)", a.Node(), a.Ready(t.Context()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	newID := a.Node()
	for !strings.Contains(alog.String(), `msg="fleet rejoined" node=`+newID+` was=`+oldID) {
		if ctx.Err() != nil {
			t.Fatalf("no \"fleet rejoined node=%s was=%s\" in a's log", newID, oldID)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// taken's resource was taken: it ends, as without a rejoin.
	for taken.read() != nil {
	}
	if g, ok := taken.err.(*channel.Gone); !ok || g.Code != 1012 || g.Reason != "node left the fleet" {
		t.Fatalf("the connection whose resource was taken: %v, want 1012 node left the fleet", taken.err)
	}
	// owner is open: it saw its resources deleted (and x, then x taken),
	// then made again, and /feed's every notification in between.
	want := []string{"delete /r/t0", "delete /r/t1", "delete /r/x",
		"update /feed/k0", "update /feed/k1", "update /feed/k2", "update /feed/k3", "update /feed/k4",
		"update /r/x", "update /r/t0", "update /r/t1"}
	owner.expect(ownerFrom + len(want))
	got := notes(owner, ownerFrom)
	slices.Sort(got[:3]) // the death deletes by connection, then by path
	if !slices.Equal(got, want) {
		t.Fatalf("owner's notifications across the rejoin:\n got %v\nwant %v", got, want)
	}
	if err := owner.c.Err(); err != nil {
		t.Fatalf("owner ended: %v", err)
	}
	// sub got /feed as b's subscriber did: the same seqs, in order.
	sub.expect(5)
	ref.expect(5)
	if !slices.Equal(sub.seqs(), ref.seqs()) {
		t.Fatalf("/feed on a %v, on b %v", sub.seqs(), ref.seqs())
	}
	// The others saw t0 and t1 deleted, then made again.
	for i, w := range watchers {
		w.expect(6)
		got := notes(w, 0)
		slices.Sort(got[:3])
		if !slices.Equal(got[:3], []string{"delete /r/t0", "delete /r/t1", "delete /r/x"}) ||
			!slices.Contains(got[3:], "update /r/t0") || !slices.Contains(got[3:], "update /r/t1") || !slices.Contains(got[3:], "update /r/x") {
			t.Fatalf("watcher %d: %v", i, got)
		}
	}
	// Every node holds them as they were, owned by owner under the new id.
	for i, n := range []*node{an, b, c} {
		if err := n.tree.WaitApplied(ctx, a.Tree().Applied()); err != nil {
			t.Fatal(err)
		}
		r := string(n.tree.Call(ctx, "", "", []byte(`{"method":"GET","resource":"/r/t1"}`)))
		if r != `{"code":"success","resource":"/r/t1","type":"text/plain","entity":"one"}` {
			t.Fatalf("node %d: /r/t1: %s", i, r)
		}
		r = string(n.tree.Call(ctx, "", "", []byte(`{"method":"GET","resource":"/r/x"}`)))
		if r != `{"code":"success","resource":"/r/x","type":"application/json","entity":{"by":"c"}}` {
			t.Fatalf("node %d: /r/x: %s", i, r)
		}
	}
	if ns := b.tree.Nodes(); !slices.Contains(ns, newID) {
		t.Fatalf("nodes owning connections known to b: %v, want %s among them", ns, newID)
	}
	// owner writes under the new id, and its resources go with it.
	if r := owner.do(`{"method":"PUT","resource":"/r/t2","entity":{}}`); code(r) != "success" {
		t.Fatal(r)
	}
	owner.c.Disconnect()
	for i, w := range watchers {
		w.expect(10)
		got := notes(w, 6)
		if !slices.Equal(got, []string{"update /r/t2", "delete /r/t0", "delete /r/t1", "delete /r/t2"}) {
			t.Fatalf("watcher %d after owner left: %v", i, got)
		}
	}
}

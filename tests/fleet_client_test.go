package tests

import (
	"encoding/json"
	"runtime"
	"strconv"
	"testing"
	"time"

	resoclient "github.com/reso-project/reso/client"
)

// TestGoClientFleet: the Go client on node 0 of a fleet, subscribed to a
// resource that a writer on node 2 changes; node 0 is killed with -9 and
// the client reconnects by itself through the fleet's proxy, which sends
// it to node 1. It resumes with since and is told recovered: true (every
// node holds the same history); every notification arrives once, in seq
// order, those written while it was away included; Close leaves no
// goroutine.
func TestGoClientFleet(t *testing.T) {
	f := startFleet(t, fleetNodes)
	ctx := ctx(t)
	writer, err := resoclient.Dial(ctx, "ws://"+f.node(2).Addr+"/channel", fastClient())
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	room := "/" + uniq("fleet-")
	if err := writer.Put(ctx, room, nil, true); err != nil {
		t.Fatal(err)
	}

	// The client's way in: a proxy that can refuse connections, in front
	// of the fleet's round-robin proxy. The client is the only one to go
	// through it, so its first connection goes to node 0 and, node 0
	// dead, its next one to node 1.
	gate := newProxy(t, f.proxy.addr)
	before := runtime.NumGoroutine()
	c, err := resoclient.Dial(ctx, "ws://"+gate.Addr+"/channel", fastClient())
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	sent := 0
	post := func(text string) {
		t.Helper()
		if _, err := writer.Post(ctx, room, map[string]string{"text": text}, true); err != nil {
			t.Fatal(err)
		}
		sent++
	}
	notification := func(want string) {
		t.Helper()
		ev := nextEvent(t, sub)
		if ev.Notification == nil {
			t.Fatalf("%+v, want the notification of %q", ev, want)
		}
		var e struct{ Text string }
		if err := json.Unmarshal(ev.Notification.Entity, &e); err != nil || e.Text != want {
			t.Fatalf("notification %s, want %q", ev.Notification.Entity, want)
		}
		seqs = append(seqs, ev.Notification.Seq)
	}
	for i := range 3 {
		post("live " + strconv.Itoa(i))
		notification("live " + strconv.Itoa(i))
	}

	// The client stays away (the gate refuses it) while node 0 dies and
	// the writer goes on.
	gate.setDown(true)
	f.node(0).kill()
	waitDown(t, c)
	for i := range 3 {
		post("away " + strconv.Itoa(i))
	}
	gate.setDown(false)
	for i := range 3 {
		notification("away " + strconv.Itoa(i))
	}
	if ev := nextEvent(t, sub); ev.Resync == nil || !ev.Resync.Recovered {
		t.Fatalf("%+v, want a recovered resync", ev)
	}
	waitState(t, c, resoclient.Open)
	for i := range 3 {
		post("after " + strconv.Itoa(i))
		notification("after " + strconv.Itoa(i))
	}
	// A round trip on the new node: nothing more for the subscription.
	if _, err := c.Get(ctx, room); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-sub.Events():
		t.Fatalf("an event too many: %+v", ev)
	default:
	}
	if len(seqs) != sent {
		t.Errorf("%d notifications, %d sent", len(seqs), sent)
	}
	increasing(t, seqs)

	c.Close()
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > before+3 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// jsFleetTest is the JavaScript client's test file that needs a fleet.
const jsFleetTest = "fleet.test.mjs"

// TestJSClientFleet runs client/js/test/fleet.test.mjs in Node against a
// fleet: the same case as TestGoClientFleet for reso.js, and a Channel
// given the list of the nodes' URLs. The nodes are given in RESO_FLEET as
// a JSON list of {addr, pid}: the tests kill nodes with SIGKILL themselves.
func TestJSClientFleet(t *testing.T) {
	t.Parallel()
	nodePath(t) // skips (or fails under CI) before the fleet starts
	f := startFleet(t, fleetNodes)
	type node struct {
		Addr string `json:"addr"`
		Pid  int    `json:"pid"`
	}
	var nodes []node
	for i := range fleetNodes {
		nodes = append(nodes, node{f.node(i).Addr, f.node(i).cmd.Process.Pid})
	}
	b, err := json.Marshal(nodes)
	if err != nil {
		t.Fatal(err)
	}
	runNodeTests(t, []string{"RESO_FLEET=" + string(b)}, "../client/js/test/"+jsFleetTest)
}

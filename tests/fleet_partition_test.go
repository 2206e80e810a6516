package tests

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// addNode starts one more node of f, with -nats urls instead of the
// fleet's and the extra flags, and returns its index. Its clients must dial it directly (the
// fleet's proxy knows the nodes started with the fleet).
func (f *fleet) addNode(urls string, extra ...string) int {
	f.t.Helper()
	args := slices.Clone(f.args)
	i := slices.Index(args, "-nats")
	args[i+1] = urls
	args = append(args, extra...)
	s, err := startIn(f.t, f.dir, mode{name: "fleet"}, args...)
	if err != nil {
		f.t.Fatal(err)
	}
	s.wait = fleetWait
	f.mu.Lock()
	f.nodes = append(f.nodes, s)
	n := len(f.nodes) - 1
	f.mu.Unlock()
	f.t.Cleanup(func() {
		s.stop()
		if f.t.Failed() {
			f.t.Logf("node %d log (%s):\n%s", n, s.Addr, s.log.String())
		}
	})
	return n
}

// readyNodeRe reads the node id of a ready node's /readyz.
var readyNodeRe = regexp.MustCompile(`^ready\nnode ([0-9a-f]{16})\n$`)

// TestFleetPartitioned: a node cut off from NATS (every connection to the
// NATS servers goes through a proxy, which cuts them and refuses new
// ones; the process lives) stops acknowledging (a write answers
// unavailable) and reports not ready; the other nodes delete its
// transient resources after the heartbeat timeout. When the proxy lets
// traffic through again, the node sees its own death in the log and
// rejoins without a restart under a new id, ready again, keeping its
// connection open: the transient resources the death deleted are made
// again under the new id (the others' subscribers see them deleted, then
// updated), the write it answered unavailable is not applied, and its
// clients' writes reach every node; /readyz and reso_fleet_info name the
// new id. (Until issue 36 the death ended the node's connections with
// 1012 and nothing came back.)
func TestFleetPartitioned(t *testing.T) {
	t.Parallel()
	nc := natstest.StartProcs(t, 3)
	f := startFleetOn(t, nc, 2)
	var gates []*tcpProxy
	var urls []string
	for i := range 3 {
		g := newProxy(t, nc.Addr(i))
		gates = append(gates, g)
		urls = append(urls, "nats://"+g.Addr)
	}
	v := f.addNode(strings.Join(urls, ","), "-admin-addr", "127.0.0.1:0")
	oldID := f.nodeID(v)
	admin := adminURL(t, f.node(v))
	info := func(id string) string { return `reso_fleet_info{fleet="` + f.name + `",node="` + id + `"} 1` + "\n" }
	if _, body := fetch(t, admin+"/metrics"); !strings.Contains(body, info(oldID)) {
		t.Fatalf("metrics of the node: no %q", info(oldID))
	}

	p := "/" + uniq("part-")
	victim := clients(t, f.on(v)).dial("$V")
	for i := range 3 {
		if r := victim.call(fmt.Sprintf(`{"method":"PUT","resource":"%s/t%d","msg_id":1}`, p, i)); r != `{"msg_id":1,"code":"success"}` {
			t.Fatal(r)
		}
	}
	if r := victim.call(`{"method":"PUT","resource":"` + p + `/kept","persistent":true,"msg_id":1}`); r != `{"msg_id":1,"code":"success"}` {
		t.Fatal(r)
	}
	var watchers []*wsClient
	for i := range 2 {
		w := clients(t, f.on(i)).dial(fmt.Sprintf("$W%d", i))
		w.call(`{"method":"SUBSCRIBE","resource":"` + p + `","msg_id":1}`)
		watchers = append(watchers, w)
	}

	// The partition.
	for _, g := range gates {
		g.setDown(true)
		g.cut()
	}
	cut := time.Now()
	for _, w := range watchers {
		// The death is judged at most the suspicion's ceiling after the
		// node's last heartbeat (docs/fleet.md §5), later by a watcher
		// starved of CPU, which accuses nobody until it is on time
		// again: a loaded machine takes more than one frame's guard.
		w.guard = fleetWait
		del := `{"notify":"UPDATE","resource":"` + p + `","delete":"%s","type":null,"entity":null,"seq":N}`
		w.expect(fmt.Sprintf(del, "t0"), fmt.Sprintf(del, "t1"), fmt.Sprintf(del, "t2"))
		w.guard = 0
	}
	deleted := time.Since(cut)
	// Still cut off, the node acknowledges nothing and says why.
	if r := victim.call(`{"method":"PUT","resource":"` + p + `/lost","persistent":true,"msg_id":2}`); r != `{"msg_id":2,"code":"failed","reason":"unavailable"}` {
		t.Fatalf("a write on the node cut off: %s", r)
	}
	r := f.node(v).get(t, "/readyz")
	if r.StatusLine != "HTTP/1.1 503 Service Unavailable" || !strings.Contains(r.Body, "fleet "+f.name+": fleet: nats unreachable") {
		t.Fatalf("readyz of the node cut off: %s %q", r.StatusLine, r.Body)
	}

	// The partition heals.
	for _, g := range gates {
		g.setDown(false)
	}
	healed := time.Now()
	// Awaited: the node ready again, under another id. (It may answer
	// ready under its old id for a moment after the heal, before it
	// applied its death.)
	var newID string
	deadline := time.Now().Add(90 * time.Second)
	for {
		r := f.node(v).get(t, "/readyz")
		if m := readyNodeRe.FindStringSubmatch(r.Body); r.StatusLine == "HTTP/1.1 200 OK" && m != nil && m[1] != oldID {
			newID = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node not ready 90 s after the partition healed: %s %q", r.StatusLine, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rejoined := time.Since(healed)
	// Awaited: the log line (the node's output reaches the test through
	// a pipe).
	for !strings.Contains(f.node(v).Log(), `msg="fleet rejoined" node=`+newID+` was=`+oldID) {
		if time.Now().After(deadline) {
			t.Fatalf("no \"fleet rejoined node=%s was=%s\" in the node's log", newID, oldID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, body := fetch(t, admin+"/metrics"); !strings.Contains(body, info(newID)) || strings.Contains(body, oldID) {
		t.Fatalf("metrics of the rejoined node: want %q and nothing of %s", info(newID), oldID)
	}
	t.Logf("transient resources of the node cut off deleted %v after the cut (-fleet-heartbeat %s); partition healed: ready under a new id %v after",
		deleted.Round(time.Millisecond), fleetHeartbeat, rejoined.Round(time.Millisecond))

	// The transient resources come back, made again by the connection
	// kept open; the write answered unavailable was not applied.
	for _, w := range watchers {
		upd := `{"notify":"UPDATE","resource":"` + p + `","update":"%s","type":"application/json","entity":{},"seq":N}`
		w.expect(fmt.Sprintf(upd, "t0"), fmt.Sprintf(upd, "t1"), fmt.Sprintf(upd, "t2"))
	}
	for i := range f.nodes {
		for _, name := range []string{"t0", "t1", "t2", "kept"} {
			wantHTTP(t, f.on(i).httpJSON("GET", "/channel"+p+"/"+name, ""), "200 OK", "{}")
		}
		wantHTTP(t, f.on(i).httpJSON("GET", "/channel"+p+"/lost", ""), "404 Not Found", "-")
	}
	// The kept connection's writes reach the others, and nothing else was
	// notified meanwhile.
	if r := victim.call(`{"method":"PUT","resource":"` + p + `/again","msg_id":3}`); r != `{"msg_id":3,"code":"success"}` {
		t.Fatalf("a write on the rejoined node: %s", r)
	}
	for _, w := range watchers {
		w.expect(`{"notify":"UPDATE","resource":"` + p + `","update":"again","type":"application/json","entity":{},"seq":N}`)
	}
	// Its transient resources are its own under the new id: they go with
	// it, on every node.
	victim.closeNormal()
	for _, w := range watchers {
		del := `{"notify":"UPDATE","resource":"` + p + `","delete":"%s","type":null,"entity":null,"seq":N}`
		w.expect(fmt.Sprintf(del, "again"), fmt.Sprintf(del, "t0"), fmt.Sprintf(del, "t1"), fmt.Sprintf(del, "t2"))
		w.quiet()
	}
}

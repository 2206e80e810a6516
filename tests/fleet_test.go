package tests

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// on returns a chanServer for the channel tests' helpers that talks to
// node i of f alone; f is a test's own fleet (not sharedChannel's).
func (f *fleet) on(i int) *chanServer {
	return &chanServer{server: f.node(i), t: f.t.(*testing.T), m: fleetMode}
}

// TestFleetNodes: each node prints its id and /readyz shows it; a user
// added with reso user -nats logs in on every node; two clients on two
// nodes racing to create one child: one success, one exists.
func TestFleetNodes(t *testing.T) {
	t.Parallel()
	f := startFleet(t, fleetNodes)
	ids := map[string]bool{}
	for i := range f.nodes {
		id := f.nodeID(i)
		if ids[id] {
			t.Fatalf("node id %s twice", id)
		}
		ids[id] = true
		wantHTTP(t, f.node(i).get(t, "/readyz"), "200 OK", "ready\nnode "+id+"\n")
	}

	out, errOut, code := runReso(t, f.dir, nil, "s3cret\n", "user", "add", "bob@example.org", "-nats", f.nats.URLs(), "-fleet", f.name)
	if code != 0 || !regexp.MustCompile(`^added bob@example.org \(id \d+\)\n$`).MatchString(out) {
		t.Fatalf("reso user add: %d %q %q", code, out, errOut)
	}
	for i := range f.nodes {
		r := f.node(i).get(t, "/private/x", authBasic("bob@example.org", "s3cret"))
		wantHTTP(t, r, "200 OK", `{"path": "x"}`)
		r = f.node(i).get(t, "/private/x", authBasic("bob@example.org", "wrong"))
		if !strings.HasPrefix(r.StatusLine, "HTTP/1.1 401 ") {
			t.Fatalf("node %d, wrong password: %s", i, r.StatusLine)
		}
	}
	out, _, code = runReso(t, f.dir, nil, "", "user", "list", "-nats", f.nats.URLs(), "-fleet", f.name)
	if code != 0 || !strings.Contains(out, "bob@example.org") {
		t.Fatalf("reso user list: %d %q", code, out)
	}

	p := "/" + uniq("race-")
	a, b := clients(t, f.on(0)).dial("$A"), clients(t, f.on(1)).dial("$B")
	for i := range 10 {
		msg := fmt.Sprintf(`{"method":"POST","resource":%q,"id":"x%d","persistent":true,"msg_id":1}`, p, i)
		var ra, rb string
		var wg sync.WaitGroup
		wg.Go(func() { ra = a.call(msg) })
		wg.Go(func() { rb = b.call(msg) })
		wg.Wait()
		ok, exists := fmt.Sprintf(`{"msg_id":1,"code":"success","id":"x%d"}`, i), `{"msg_id":1,"code":"failed","reason":"exists"}`
		if !(ra == ok && rb == exists || ra == exists && rb == ok) {
			t.Fatalf("race %d: %s and %s", i, ra, rb)
		}
	}
}

// TestFleetNodeKilled: kill -9 of a node: the others delete its transient
// resources once, with notifications, within the heartbeat timeout; a
// node started in its place continues the seq with the state intact.
func TestFleetNodeKilled(t *testing.T) {
	t.Parallel()
	f := startFleet(t, fleetNodes)
	p := "/" + uniq("room-")
	victim := clients(t, f.on(0)).dial("$V")
	for i := range 3 {
		if r := victim.call(fmt.Sprintf(`{"method":"PUT","resource":"%s/t%d","msg_id":1}`, p, i)); r != `{"msg_id":1,"code":"success"}` {
			t.Fatal(r)
		}
	}
	wantHTTP(t, f.on(1).httpJSON("PUT", "/channel"+p+"/kept", `{"k":1}`), "200 OK", "{}")
	var watchers []*wsClient
	var seqs [][]uint64
	for i := 1; i < fleetNodes; i++ {
		w := clients(t, f.on(i)).dial(fmt.Sprintf("$W%d", i))
		w.call(`{"method":"SUBSCRIBE","resource":"` + p + `","msg_id":1}`)
		watchers = append(watchers, w)
	}
	killed := time.Now()
	f.node(0).kill()
	for _, w := range watchers {
		del := `{"notify":"UPDATE","resource":"` + p + `","delete":"%s","type":null,"entity":null,"seq":N}`
		seqs = append(seqs, w.expect(fmt.Sprintf(del, "t0"), fmt.Sprintf(del, "t1"), fmt.Sprintf(del, "t2")))
	}
	t.Logf("3 transient resources deleted %v after kill -9 (-fleet-heartbeat %s)", time.Since(killed).Round(time.Millisecond), fleetHeartbeat)
	if fmt.Sprint(seqs[0]) != fmt.Sprint(seqs[1]) {
		t.Fatalf("seqs differ between nodes: %v", seqs)
	}
	// Once: nothing more after the other nodes' own proposals of the death.
	time.Sleep(3 * time.Second)
	for _, w := range watchers {
		w.quiet()
	}
	f.launch(0)
	c := clients(t, f.on(0)).dial("$N")
	c.call(`{"method":"SUBSCRIBE","resource":"` + p + `","msg_id":1}`)
	if r := c.call(`{"method":"GET","resource":"` + p + `/kept","msg_id":2}`); r != `{"msg_id":2,"code":"success","resource":"`+p+`/kept","type":"application/json","entity":{"k":1}}` {
		t.Fatalf("GET on the new node: %s", r)
	}
	c.call(`{"method":"PUT","resource":"` + p + `/new","persistent":true,"msg_id":3}`)
	got := c.expect(`{"notify":"UPDATE","resource":"` + p + `","update":"new","type":"application/json","entity":{},"seq":N}`)
	if len(got) != 1 || got[0] <= seqs[0][2] {
		t.Fatalf("seq %v on the new node after %v", got, seqs[0])
	}
}

// TestFleetNATSDown: with every NATS server stopped, writes answer
// 503 Service Unavailable and /readyz says why; when NATS comes back the
// node recovers by itself.
func TestFleetNATSDown(t *testing.T) {
	t.Parallel()
	nc := natstest.StartProcs(t, 3)
	f := startFleetOn(t, nc, 2)
	p := "/channel/" + uniq("down-")
	wantHTTP(t, f.on(0).httpJSON("PUT", p, `{"n":1}`), "200 OK", "{}")
	nc.StopAll()
	wantHTTP(t, f.on(0).httpJSON("PUT", p, `{"n":2}`), "503 Service Unavailable", "-")
	r := f.node(1).get(t, "/readyz")
	if r.StatusLine != "HTTP/1.1 503 Service Unavailable" || !strings.Contains(r.Body, "fleet "+f.name+": fleet: nats unreachable") {
		t.Fatalf("readyz with NATS down: %s %q", r.StatusLine, r.Body)
	}
	for i := range 3 {
		if err := nc.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for i := range f.nodes {
		for f.node(i).get(t, "/readyz").StatusLine != "HTTP/1.1 200 OK" {
			if time.Now().After(deadline) {
				t.Fatalf("node %d not ready after NATS came back", i)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// Awaited: a write answered 200 (the first ones may wait for the log's
	// leader, up to 15 s each, and answer 503).
	for f.on(1).httpJSON("PUT", p, `{"n":3}`).StatusLine != "HTTP/1.1 200 OK" {
		if time.Now().After(deadline) {
			t.Fatal("no write after NATS came back")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Awaited: the other node reads it (while its consumer of the log
	// reconnects it may answer 503 after 10 s; never an older value).
	for {
		r := f.on(0).httpJSON("GET", p, "")
		if r.StatusLine == "HTTP/1.1 503 Service Unavailable" && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		wantHTTP(t, r, "200 OK", `{"n":3}`)
		break
	}
}

// TestFleetProposerKilled: kill -9 of a node while its connections'
// writes are under way (in batches on their way to the log), 20 cycles
// with a node started anew each time: no acknowledged write is lost, none
// is applied twice, and the surviving nodes notify the same seqs.
func TestFleetProposerKilled(t *testing.T) {
	t.Parallel()
	f := startFleet(t, fleetNodes)
	p := "/" + uniq("kill-")
	var subs []*wsClient
	for i := 1; i < fleetNodes; i++ {
		w := clients(t, f.on(i)).dial(fmt.Sprintf("$S%d", i))
		w.call(`{"method":"SUBSCRIBE","resource":"` + p + `","msg_id":1}`)
		subs = append(subs, w)
	}
	acked := map[string]bool{}
	var mu sync.Mutex
	const cycles, conns = 20, 4
	for cycle := range cycles {
		if cycle > 0 {
			f.launch(0)
		}
		var done atomic.Int64
		var wg sync.WaitGroup
		g := clients(t, f.on(0))
		for k := range conns {
			c := g.dial(fmt.Sprintf("$K%d", k))
			wg.Go(func() {
				for j := 0; ; j++ {
					name := fmt.Sprintf("c%dk%dj%d", cycle, k, j)
					r, err := c.tryCall(`{"method":"PUT","resource":"` + p + `/` + name + `","entity":{},"persistent":true,"msg_id":1}`)
					if err != nil || r != `{"msg_id":1,"code":"success"}` {
						return // killed
					}
					mu.Lock()
					acked[name] = true
					mu.Unlock()
					done.Add(1)
				}
			})
		}
		deadline := time.Now().Add(time.Minute)
		for done.Load() < 20 {
			if time.Now().After(deadline) {
				t.Fatalf("cycle %d: %d writes acknowledged in a minute, want 20", cycle, done.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
		f.node(0).kill()
		wg.Wait()
	}
	wantHTTP(t, f.on(1).httpJSON("PUT", "/channel"+p+"/marker", `{}`), "200 OK", "{}")
	var first []string
	for i, w := range subs {
		var got []string
		seen := map[string]bool{}
		for {
			fr := w.next()
			name := field(fr, "update")
			if name == "" {
				continue
			}
			if seen[name] {
				t.Fatalf("node %d: %s applied twice", i+1, name)
			}
			seen[name] = true
			got = append(got, field(fr, "seq")+" "+name)
			if name == `"marker"` {
				break
			}
		}
		for name := range acked {
			if !seen[`"`+name+`"`] {
				t.Fatalf("node %d: acknowledged write %s lost", i+1, name)
			}
		}
		if i == 0 {
			first = got
		} else if fmt.Sprint(got) != fmt.Sprint(first) {
			t.Fatalf("nodes 1 and %d notified differently:\n%v\n%v", i+1, first, got)
		}
	}
	t.Logf("%d cycles: %d writes acknowledged, %d applied", cycles, len(acked), len(first)-1)
}

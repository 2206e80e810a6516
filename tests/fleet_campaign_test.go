package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	resoclient "github.com/reso-project/reso/client"
)

// killCycles is how many nodes TestFleetKillCampaign kills: a few in the
// default run, RESO_FLEET_KILL_CYCLES (20 for the campaign of issue 29).
func killCycles(t *testing.T) int {
	s := os.Getenv("RESO_FLEET_KILL_CYCLES")
	if s == "" {
		return 4
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("RESO_FLEET_KILL_CYCLES=%q: want a number of cycles", s)
	}
	return n
}

// nodeGate is a loopback address that passes each new TCP connection to
// node i of a fleet as it is then (a node started again listens on
// another port): a client's fixed URL of that node.
type nodeGate struct{ addr string }

// newNodeGate starts the gate of node i until t ends.
func newNodeGate(t *testing.T, f *fleet, i int) *nodeGate {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				up, err := net.Dial("tcp", f.node(i).Addr)
				if err != nil {
					return // the node is down: refused, as it would be
				}
				defer up.Close()
				mu.Lock()
				open[c], open[up] = true, true
				mu.Unlock()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(up, c); up.Close(); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, up); c.Close(); done <- struct{}{} }()
				<-done
				<-done
				mu.Lock()
				delete(open, c)
				delete(open, up)
				mu.Unlock()
			})
		}
	})
	return &nodeGate{addr: ln.Addr().String()}
}

// heard is one notification a subscriber was given: its seq and the
// child it changed.
type heard struct {
	seq  uint64
	name string
}

// campaignSub keeps what one Go client's subscription delivers.
type campaignSub struct {
	mu       sync.Mutex
	heard    []heard
	resyncs  int // recovered
	lost     int // Resync events without recovery
	names    map[string]bool
	c        *resoclient.Client
	finished chan struct{}
}

// has reports whether the subscriber was notified of name.
func (s *campaignSub) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name]
}

// TestFleetKillCampaign: kill -9 of one reso node of three under load,
// cycle after cycle (each cycle kills the next node in turn and starts it
// again), with persistent writes in flight on the node killed and on the
// others. Go clients, given the URLs of the three nodes, subscribe to the
// room the writes change: those on the node killed reconnect to another
// node and resubscribe with since; every one of them is told
// recovered: true, and every subscriber gets exactly the notifications of
// the room's history, each once, in seq order (compared with a replay of
// the history at the end). No acknowledged write is lost: each reads back
// on every node. The writers on the surviving nodes are answered
// throughout: the longest wait between two of their replies is reported
// (reported, not bounded: this machine is shared).
//
// RESO_FLEET_KILL_CYCLES sets the number of cycles (4 by default; 20 is
// the campaign of issue 29).
func TestFleetKillCampaign(t *testing.T) {
	t.Parallel()
	cycles := killCycles(t)
	f := startFleet(t, fleetNodes)
	ctx := ctx(t)
	p := "/" + uniq("campaign-")
	var urls []string
	for i := range fleetNodes {
		urls = append(urls, "ws://"+newNodeGate(t, f, i).addr+"/channel")
	}

	// Subscribers: Go clients that start at a random node of the list.
	const nsubs = 6
	var subs []*campaignSub
	for range nsubs {
		opt := fastClient()
		opt.URLs = urls
		c, err := resoclient.Dial(ctx, "", opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		sub, err := c.Subscribe(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		s := &campaignSub{c: c, names: map[string]bool{}, finished: make(chan struct{})}
		go func() {
			defer close(s.finished)
			for ev := range sub.Events() {
				s.mu.Lock()
				switch {
				case ev.Resync != nil && ev.Resync.Recovered:
					s.resyncs++
				case ev.Resync != nil:
					s.lost++
				case ev.Notification.Update != "":
					s.heard = append(s.heard, heard{ev.Notification.Seq, ev.Notification.Update})
					s.names[ev.Notification.Update] = true
				}
				s.mu.Unlock()
			}
		}()
		subs = append(subs, s)
	}
	// seen waits until every subscriber was notified of name.
	seen := func(name string) {
		t.Helper()
		deadline := time.Now().Add(fleetWait)
		for _, s := range subs {
			for !s.has(name) {
				if time.Now().After(deadline) {
					t.Fatalf("a subscriber not notified of %s within %v (state %v)", name, fleetWait, s.c.State())
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	resyncs := func() (ok, lost int) {
		for _, s := range subs {
			s.mu.Lock()
			ok, lost = ok+s.resyncs, lost+s.lost
			s.mu.Unlock()
		}
		return
	}
	put := func(w *wsClient, name string) bool {
		r, err := w.tryCall(`{"method":"PUT","resource":"` + p + `/` + name + `","entity":{},"persistent":true,"msg_id":1}`)
		return err == nil && r == `{"msg_id":1,"code":"success"}`
	}

	if !put(clients(t, f.on(0)).dial("$start"), "start") {
		t.Fatal("PUT start")
	}
	seen("start")

	var mu sync.Mutex
	var acked []string
	var longest time.Duration // between two replies on a surviving node
	var survivorFailed []string
	var recoveries []time.Duration
	moved := 0
	for cycle := range cycles {
		k := cycle % fleetNodes
		// Writers on the surviving nodes, for the whole cycle.
		stop := make(chan struct{})
		var probes sync.WaitGroup
		for i := range fleetNodes {
			if i == k {
				continue
			}
			w := clients(t, f.on(i)).dial(fmt.Sprintf("$P%d", i))
			probes.Go(func() {
				last := time.Now()
				for j := 0; ; j++ {
					select {
					case <-stop:
						return
					default:
					}
					name := fmt.Sprintf("c%dn%dj%d", cycle, i, j)
					ok := put(w, name)
					now := time.Now()
					mu.Lock()
					longest = max(longest, now.Sub(last))
					if ok {
						acked = append(acked, name)
					} else {
						survivorFailed = append(survivorFailed, name)
					}
					mu.Unlock()
					last = now
					if !ok {
						return
					}
					time.Sleep(10 * time.Millisecond) // a bounded load
				}
			})
		}
		// Writers on the node to kill, until it dies.
		var inflight atomic.Int64
		var writers sync.WaitGroup
		for k2 := range 3 {
			w := clients(t, f.on(k)).dial(fmt.Sprintf("$K%d", k2))
			writers.Go(func() {
				for j := 0; ; j++ {
					name := fmt.Sprintf("c%dk%dj%d", cycle, k2, j)
					if !put(w, name) {
						return // killed
					}
					mu.Lock()
					acked = append(acked, name)
					mu.Unlock()
					inflight.Add(1)
				}
			})
		}
		deadline := time.Now().Add(time.Minute)
		for inflight.Load() < 20 {
			if time.Now().After(deadline) {
				t.Fatalf("cycle %d: %d writes acknowledged on node %d in a minute, want 20", cycle, inflight.Load(), k)
			}
			time.Sleep(5 * time.Millisecond)
		}
		okBefore, _ := resyncs()
		killed := time.Now()
		f.node(k).kill()
		writers.Wait()
		// Awaited: every subscriber back and caught up, those of the node
		// killed on another node: a write after the kill reaches them all.
		mark := fmt.Sprintf("mark%d", cycle)
		if !put(clients(t, f.on((k+1)%fleetNodes)).dial("$M"), mark) {
			t.Fatalf("cycle %d: PUT %s", cycle, mark)
		}
		seen(mark)
		recoveries = append(recoveries, time.Since(killed))
		okAfter, lost := resyncs()
		moved += okAfter - okBefore
		if lost > 0 {
			t.Fatalf("cycle %d: %d resubscriptions not recovered", cycle, lost)
		}
		f.launch(k)
		close(stop)
		probes.Wait()
	}
	mu.Lock()
	if len(survivorFailed) > 0 {
		t.Fatalf("writes on surviving nodes not acknowledged: %v", survivorFailed)
	}
	mu.Unlock()
	if !put(clients(t, f.on(0)).dial("$end"), "end") {
		t.Fatal("PUT end")
	}
	seen("end")

	// The history of the room, replayed from start: what every subscriber
	// must have heard, no more, no less, in this order.
	var first uint64
	subs[0].mu.Lock()
	first = subs[0].heard[0].seq
	subs[0].mu.Unlock()
	ref := clients(t, f.on(0)).dial("$R")
	reply := ref.call(fmt.Sprintf(`{"method":"SUBSCRIBE","resource":%q,"since":%d,"msg_id":"r"}`, p, first))
	if field(reply, "recovered") != "true" {
		t.Fatalf("the replay of the room's history: %s", reply)
	}
	want := []heard{{first, "start"}}
	for _, fr := range ref.backlog {
		if name := field(fr, "update"); name != "" {
			seq, _ := strconv.ParseUint(field(fr, "seq"), 10, 64)
			want = append(want, heard{seq, name[1 : len(name)-1]})
		}
	}
	ref.backlog = nil
	if want[len(want)-1].name != "end" {
		t.Fatalf("the replay ends with %v, want end", want[len(want)-1])
	}
	for i, s := range subs {
		s.mu.Lock()
		got := slices.Clone(s.heard)
		s.mu.Unlock()
		if !slices.Equal(got, want) {
			missed, dup := compareHeard(got, want)
			t.Fatalf("subscriber %d: %d notifications, the history %d: missed %v, duplicated %v", i, len(got), len(want), missed, dup)
		}
	}
	inHistory := map[string]int{}
	for _, h := range want {
		inHistory[h.name]++
		if inHistory[h.name] > 1 {
			t.Fatalf("%s applied twice (the history: %v)", h.name, want)
		}
	}
	for _, name := range acked {
		if inHistory[name] != 1 {
			t.Fatalf("acknowledged write %s in the history %d times", name, inHistory[name])
		}
	}
	for i := range fleetNodes {
		r := f.on(i).httpJSON("GET", "/channel"+p, "")
		var ids []string
		if err := json.Unmarshal([]byte(r.Body), &ids); err != nil {
			t.Fatalf("node %d: GET %s: %s %q", i, p, r.StatusLine, r.Body)
		}
		for _, name := range acked {
			if !slices.Contains(ids, name) {
				t.Fatalf("node %d: acknowledged write %s lost", i, name)
			}
		}
	}
	slices.Sort(recoveries)
	t.Logf("%d cycles, %d subscribers: %d resubscriptions after a kill, all recovered; %d notifications each, 0 missed, 0 duplicated; %d writes acknowledged, none lost; longest wait between two replies on a surviving node %v (-fleet-heartbeat %s); kill to every subscriber caught up: median %v, max %v",
		cycles, nsubs, moved, len(want), len(acked), longest.Round(time.Millisecond), fleetHeartbeat,
		recoveries[len(recoveries)/2].Round(time.Millisecond), recoveries[len(recoveries)-1].Round(time.Millisecond))
	// The longest wait is a figure, not a bound: on a shared machine a
	// pause says more about its load than about the fleet.
}

// compareHeard returns the notifications of want missing from got and
// those got has more than once.
func compareHeard(got, want []heard) (missed, dup []heard) {
	n := map[heard]int{}
	for _, h := range got {
		n[h]++
		if n[h] == 2 {
			dup = append(dup, h)
		}
	}
	for _, h := range want {
		if n[h] == 0 {
			missed = append(missed, h)
		}
	}
	return missed, dup
}

package tests

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	resoclient "github.com/reso-project/reso/client"
)

// fleetPageTexts is the page's record of notifications (testdata/fleet_page)
// as the JSON list of their texts.
const fleetPageTexts = `JSON.stringify(fleet.texts())`

// fleetRoom is the room of a fleet browser test: pages of
// testdata/fleet_page and a Go client write children {text} to it, and
// sent is every text written, in order.
type fleetRoom struct {
	t      *testing.T
	ctx    context.Context
	path   string
	writer *resoclient.Client
	sent   []string
}

// newFleetRoom makes a persistent room through the Go client on addr.
func newFleetRoom(t *testing.T, addr string) *fleetRoom {
	t.Helper()
	ctx := ctx(t)
	writer, err := resoclient.Dial(ctx, "ws://"+addr+"/channel", fastClient())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { writer.Close() })
	r := &fleetRoom{t: t, ctx: ctx, path: "/" + uniq("fleet-"), writer: writer}
	if err := writer.Put(ctx, r.path, nil, true); err != nil {
		t.Fatal(err)
	}
	return r
}

// write has page p (nil: the Go client) create a child and waits until
// every page in see has received every text sent so far, in order.
func (r *fleetRoom) write(p *tab, text string, see ...*tab) {
	r.t.Helper()
	if p == nil {
		if _, err := r.writer.Post(r.ctx, r.path, map[string]string{"text": text}, true); err != nil {
			r.t.Fatal(err)
		}
	} else {
		p.eval(`fleet.post(`+jsonString(r.path)+`, `+jsonString(text)+`)`, "true")
	}
	r.sent = append(r.sent, text)
	for _, q := range see {
		q.until(fleetPageTexts + ` === ` + jsonString(jsonList(r.sent)))
	}
}

// check makes a round trip on page p's connection, after which nothing
// more may come, and checks the page's record: every notification sent,
// exactly once, in seq order, and no error.
func (r *fleetRoom) check(p *tab) {
	r.t.Helper()
	R := jsonString(r.path)
	p.eval(`fleet.ch.get(`+R+`).then(() => true)`, "true")
	p.eval(fleetPageTexts, jsonString(jsonList(r.sent)))
	p.eval(`fleet.notes.every((n, i) => n.notify === "UPDATE" && n.resource === `+R+` && n.seq > 0 && (i === 0 || n.seq > fleet.notes[i - 1].seq))`, "true")
	p.eval(`JSON.stringify(fleet.errors)`, `"[]"`)
}

// fleetPageDir returns the directory of the fleet test page, for -www.
func fleetPageDir(t *testing.T) string {
	t.Helper()
	www, err := filepath.Abs("testdata/fleet_page")
	if err != nil {
		t.Fatal(err)
	}
	return www
}

// TestFleetBrowser runs an app that reso serves (-www, testdata/fleet_page,
// a page that uses reso.js) in headless Chromium on a fleet: page 1 is on
// node 0, reached through a proxy that, like a load balancer, sends a new
// connection to the next node when node 0 refuses it; page 2 is on node 1
// and a Go client on node 2. Each page is same-origin with the door it
// uses, as the origin check wants by default. Each page's writes reach the
// other. Then node 0 is killed with -9 while the proxy keeps page 1 away;
// page 2 and the Go client write meanwhile; once let through, page 1's
// Channel reconnects to another node, subscribes again with since and is
// told recovered: true; its watch of the room (a GET kept open over
// EventSource) resumes there with Last-Event-ID. The page's own records
// of notifications hold every one exactly once, in seq order, those made
// while it was away included.
func TestFleetBrowser(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // skips early without a browser
	// The default heartbeat timeout (10 s) rather than the test fleets'
	// 2 s: nothing here waits for a death to be noticed, and on a starved
	// machine 2 s can take a live node for dead, which then refuses its
	// writes (docs/fleet.md §5).
	f := startFleet(t, fleetNodes, "-www", fleetPageDir(t), "-fleet-heartbeat", "10s")
	lb := newProxy(t, f.node(0).Addr)
	lb.orElse(f.node(1).Addr, f.node(2).Addr)
	room := newFleetRoom(t, f.node(2).Addr)
	R := jsonString(room.path)

	browser := newBrowser(t)
	p1 := openPage(t, browser, "page 1", "http://"+lb.Addr+"/app/", `window.fleet && fleet.ready`)
	p2 := openPage(t, browser, "page 2", f.node(1).URL+"/app/", `window.fleet && fleet.ready`)
	for _, p := range []*tab{p1, p2} {
		p.eval(`fleet.subscribe(`+R+`)`, "true")
	}
	// Page 1 also follows the room with reso.js's watch (a GET kept open
	// over EventSource).
	p1.eval(`fleet.watch("/channel`+room.path+`")`, "true")
	p1.until(`fleet.watched.states.length === 1`)
	p1.eval(`fleet.watched.states[0].first`, "true")
	const watched = `JSON.stringify(fleet.watched.notes.map((n) => n.entity.text))`

	room.write(p1, "live from page 1", p1, p2)
	room.write(p2, "live from page 2", p1, p2)
	room.write(nil, "live from Go", p1, p2)

	// Node 0 dies while page 1 is kept away; page 2 and the Go client
	// go on writing.
	lb.setDown(true)
	f.node(0).kill()
	p1.until(`fleet.ch.state !== "open"`)
	for i := range 2 {
		room.write(p2, "away from page 2 "+strconv.Itoa(i), p2)
		room.write(nil, "away from Go "+strconv.Itoa(i), p2)
	}
	p1.eval(`fleet.ch.state !== "open" && fleet.resyncs.length === 0`, "true")

	// Let through, page 1's Channel reaches node 1, resumes with since
	// and catches up.
	lb.setDown(false)
	p1.until(`fleet.resyncs.length === 1`)
	p1.eval(`JSON.stringify(fleet.resyncs)`, `"[true]"`)
	p1.until(fleetPageTexts + ` === ` + jsonString(jsonList(room.sent)))
	// Its EventSource resumed on another node with Last-Event-ID: no
	// second state, the missed notifications once each.
	p1.until(watched + ` === ` + jsonString(jsonList(room.sent)))
	room.write(p1, "back from page 1", p1, p2)
	room.write(p2, "after from page 2", p1, p2)
	room.write(nil, "after from Go", p1, p2)

	for _, p := range []*tab{p1, p2} {
		room.check(p)
	}
	p1.until(watched + ` === ` + jsonString(jsonList(room.sent)))
	p1.eval(`fleet.watched.states.length`, "1")
	p1.eval(`fleet.watched.notes.every((n, i) => n.seq > 0 && (i === 0 || n.seq > fleet.watched.notes[i - 1].seq))`, "true")
	p1.eval(`fleet.watched.errors > 0`, "true") // it did lose its stream
	p2.eval(`JSON.stringify(fleet.resyncs)`, `"[]"`)
	p2.eval(`JSON.stringify(fleet.states)`, `"[\"open\"]"`)
}

// TestFleetBrowserURLs gives reso.js in headless Chromium the list of a
// fleet's nodes (new Channel([...])) in a page of an origin that the
// nodes allow with -channel-origin (a page that reso serves with -www may
// not do this: its Content-Security-Policy, connect-src 'self', keeps it
// to its own origin). Page 1 is given a door to each node, which the test
// can close, and opens on node 0; page 2 is given nodes 1 and 2, a Go
// client writes on node 2. Each page sees the other's writes. Node 0 is
// killed with -9 while page 1's doors are closed, page 2 and the Go
// client write meanwhile; once they open, page 1's Channel moves to the
// next node of its list, subscribes again with since and is told
// recovered: true, and its record holds every notification once, in seq
// order.
func TestFleetBrowserURLs(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // skips early without a browser
	// The pages' origin and page 1's doors exist before the nodes, which
	// are given the origin.
	origin := newProxy(t, "")
	var doors []*tcpProxy
	for range fleetNodes {
		doors = append(doors, newProxy(t, ""))
	}
	f := startFleet(t, fleetNodes, "-www", fleetPageDir(t), "-fleet-heartbeat", "10s", "-channel-origin", "http://"+origin.Addr)
	origin.to(f.node(2).Addr)
	var urls1 []string
	for i, d := range doors {
		d.to(f.node(i).Addr)
		urls1 = append(urls1, "ws://"+d.Addr+"/channel")
	}
	urls2 := []string{"ws://" + f.node(1).Addr + "/channel", "ws://" + f.node(2).Addr + "/channel"}
	room := newFleetRoom(t, f.node(2).Addr)
	R := jsonString(room.path)

	// A page of the origin (any document of it the browser renders)
	// imports the fleet page's module and starts it with its list.
	browser := newBrowser(t)
	open := func(name string, urls []string) *tab {
		p := openPage(t, browser, name, "http://"+origin.Addr+"/plain/config", `document.readyState === "complete"`)
		p.eval(`import("/app/page.js").then((m) => m.start(`+jsonList(urls)+`))`, "true")
		p.until(`fleet.ready`)
		return p
	}
	// Page 1 opens on node 0: its other doors are closed meanwhile.
	doors[1].setDown(true)
	doors[2].setDown(true)
	p1 := open("page 1", urls1)
	p1.eval(`fleet.ch.url`, jsonString(urls1[0]))
	doors[1].setDown(false)
	doors[2].setDown(false)
	p2 := open("page 2", urls2)
	if u := p2.eval(`fleet.ch.url`, ""); !strings.Contains(strings.Join(urls2, " "), strings.Trim(u, `"`)) {
		t.Fatalf("page 2 on %s, want one of %q", u, urls2)
	}
	for _, p := range []*tab{p1, p2} {
		p.eval(`fleet.subscribe(`+R+`)`, "true")
	}
	room.write(p1, "live from page 1", p1, p2)
	room.write(p2, "live from page 2", p1, p2)
	room.write(nil, "live from Go", p1, p2)

	for _, d := range doors {
		d.setDown(true)
	}
	f.node(0).kill()
	p1.until(`fleet.ch.state !== "open"`)
	for i := range 2 {
		room.write(p2, "away from page 2 "+strconv.Itoa(i), p2)
		room.write(nil, "away from Go "+strconv.Itoa(i), p2)
	}
	p1.eval(`fleet.ch.state !== "open" && fleet.resyncs.length === 0`, "true")
	for _, d := range doors {
		d.setDown(false)
	}
	p1.until(`fleet.resyncs.length === 1`)
	p1.eval(`JSON.stringify(fleet.resyncs)`, `"[true]"`)
	p1.eval(`fleet.ch.url !== `+jsonString(urls1[0]), "true")
	p1.until(fleetPageTexts + ` === ` + jsonString(jsonList(room.sent)))
	room.write(p1, "back from page 1", p1, p2)
	room.write(p2, "after from page 2", p1, p2)
	room.write(nil, "after from Go", p1, p2)
	for _, p := range []*tab{p1, p2} {
		room.check(p)
	}
	p2.eval(`JSON.stringify(fleet.resyncs)`, `"[]"`)
}

package tests

import (
	"path/filepath"
	"strconv"
	"testing"

	resoclient "github.com/reso-project/reso/client"
)

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
	chromiumPath(t) // skips early without a browser
	www, err := filepath.Abs("testdata/fleet_page")
	if err != nil {
		t.Fatal(err)
	}
	// The default heartbeat timeout (10 s) rather than the test fleets'
	// 2 s: nothing here waits for a death to be noticed, and on a starved
	// machine 2 s can take a live node for dead, which then refuses its
	// writes (docs/fleet.md §5).
	f := startFleet(t, fleetNodes, "-www", www, "-fleet-heartbeat", "10s")
	lb := newProxy(t, f.node(0).Addr)
	lb.orElse(f.node(1).Addr, f.node(2).Addr)

	ctx := ctx(t)
	writer, err := resoclient.Dial(ctx, "ws://"+f.node(2).Addr+"/channel", fastClient())
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	room := "/" + uniq("fleet-")
	R := jsonString(room)
	if err := writer.Put(ctx, room, nil, true); err != nil {
		t.Fatal(err)
	}

	browser := newBrowser(t)
	p1 := openPage(t, browser, "page 1", "http://"+lb.Addr+"/app/", `window.fleet && fleet.ready`)
	p2 := openPage(t, browser, "page 2", f.node(1).URL+"/app/", `window.fleet && fleet.ready`)
	pages := []*tab{p1, p2}
	for _, p := range pages {
		p.eval(`fleet.subscribe(`+R+`)`, "true")
	}

	// Page 1 also follows the room with reso.js's watch (a GET kept open
	// over EventSource).
	p1.eval(`fleet.watch("/channel`+room+`")`, "true")
	p1.until(`fleet.watched.states.length === 1`)
	p1.eval(`fleet.watched.states[0].first`, "true")
	const watched = `JSON.stringify(fleet.watched.notes.map((n) => n.entity.text))`

	var sent []string // the texts of the children created, in order
	const texts = `JSON.stringify(fleet.texts())`
	// write has page p (nil: the Go client) create a child and waits
	// until every page in see has its notification.
	write := func(p *tab, text string, see ...*tab) {
		t.Helper()
		if p == nil {
			if _, err := writer.Post(ctx, room, map[string]string{"text": text}, true); err != nil {
				t.Fatal(err)
			}
		} else {
			p.eval(`fleet.post(`+R+`, `+jsonString(text)+`)`, "true")
		}
		sent = append(sent, text)
		for _, q := range see {
			q.until(texts + ` === ` + jsonString(jsonList(sent)))
		}
	}
	write(p1, "live from page 1", p1, p2)
	write(p2, "live from page 2", p1, p2)
	write(nil, "live from Go", p1, p2)

	// Node 0 dies while page 1 is kept away; page 2 and the Go client
	// go on writing.
	lb.setDown(true)
	f.node(0).kill()
	p1.until(`fleet.ch.state !== "open"`)
	for i := range 2 {
		write(p2, "away from page 2 "+strconv.Itoa(i), p2)
		write(nil, "away from Go "+strconv.Itoa(i), p2)
	}
	p1.eval(`fleet.ch.state !== "open" && fleet.resyncs.length === 0`, "true")

	// Let through, page 1's Channel reaches node 1, resumes with since
	// and catches up.
	lb.setDown(false)
	p1.until(`fleet.resyncs.length === 1`)
	p1.eval(`JSON.stringify(fleet.resyncs)`, `"[true]"`)
	p1.until(texts + ` === ` + jsonString(jsonList(sent)))
	// Its EventSource resumed on another node with Last-Event-ID: no
	// second state, the missed notifications once each.
	p1.until(watched + ` === ` + jsonString(jsonList(sent)))
	write(p1, "back from page 1", p1, p2)
	write(p2, "after from page 2", p1, p2)
	write(nil, "after from Go", p1, p2)

	// A round trip on each page's connection: nothing more came. Each
	// page's record holds every notification once, in seq order.
	for _, p := range pages {
		p.eval(`fleet.ch.get(`+R+`).then(() => true)`, "true")
		p.eval(texts, jsonString(jsonList(sent)))
		p.eval(`fleet.notes.every((n, i) => n.notify === "UPDATE" && n.resource === `+R+` && n.seq > 0 && (i === 0 || n.seq > fleet.notes[i - 1].seq))`, "true")
		p.eval(`JSON.stringify(fleet.errors)`, `"[]"`)
	}
	p1.until(watched + ` === ` + jsonString(jsonList(sent)))
	p1.eval(`fleet.watched.states.length`, "1")
	p1.eval(`fleet.watched.notes.every((n, i) => n.seq > 0 && (i === 0 || n.seq > fleet.watched.notes[i - 1].seq))`, "true")
	p1.eval(`fleet.watched.errors > 0`, "true") // it did lose its stream
	p2.eval(`JSON.stringify(fleet.resyncs)`, `"[]"`)
	p2.eval(`JSON.stringify(fleet.states)`, `"[\"open\"]"`)
}

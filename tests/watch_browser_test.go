package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// eventSourceSniffer is a TCP proxy to a server that reads the HTTP
// requests passing through it and keeps the Last-Event-ID header of each
// GET of a path; while down it accepts and closes every new connection at
// once, as a lost network would.
type eventSourceSniffer struct {
	Addr   string
	target string
	path   string

	mu    sync.Mutex
	down  bool
	ids   []string // the Last-Event-ID of each GET of path, in order ("" for none)
	conns map[net.Conn]struct{}
}

// newEventSourceSniffer starts a sniffer of GETs of path to target on a
// loopback port; it ends with t.
func newEventSourceSniffer(t *testing.T, target, path string) *eventSourceSniffer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &eventSourceSniffer{Addr: l.Addr().String(), target: target, path: path, conns: map[net.Conn]struct{}{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.serve(c) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

func (p *eventSourceSniffer) serve(c net.Conn) {
	p.mu.Lock()
	down := p.down
	p.mu.Unlock()
	if down {
		c.Close()
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	pr, pw := io.Pipe()
	done := make(chan struct{}, 3)
	go func() { // what the client sends goes to the server and to the reader below
		io.Copy(io.MultiWriter(s, pw), c)
		pw.Close()
		done <- struct{}{}
	}()
	go func() { io.Copy(c, s); done <- struct{}{} }()
	go func() {
		br := bufio.NewReader(pr)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				io.Copy(io.Discard, pr) // the rest still flows to the server
				break
			}
			if req.Method == "GET" && req.URL.Path == p.path {
				p.mu.Lock()
				p.ids = append(p.ids, req.Header.Get("Last-Event-ID"))
				p.mu.Unlock()
			}
			io.Copy(io.Discard, req.Body)
		}
		done <- struct{}{}
	}()
	<-done
	c.Close()
	s.Close()
	pw.Close()
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// setDown refuses new connections (true) or lets them through (false).
func (p *eventSourceSniffer) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
}

// lastEventIDs returns the Last-Event-ID of each GET of the path so far.
func (p *eventSourceSniffer) lastEventIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ids)
}

// TestWatchBrowserRestart follows a resource with reso.js's watch (a GET
// kept open through EventSource) in headless Chromium across a kill -9 of
// reso and a restart on the same port and database: the page's
// EventSource reconnects by itself with Last-Event-ID, and the page knows
// every change exactly once, the ones made while it was away included,
// whether the server resumed the stream or sent the state again. It
// compares the changes (the children created), never the ids' form.
func TestWatchBrowserRestart(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // skips early without a browser
	www := t.TempDir()
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("<!doctype html><title>watch</title><p>watch</p>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cs := startChannel(t, allModes[0], "-www", www, "-addr", addr)
	res := "/watch/" + uniq("w")
	// The page reaches reso through the sniffer, which sees the
	// EventSource's requests and keeps the page away while down.
	sniff := newEventSourceSniffer(t, addr, "/channel"+res)

	var posted []string // the children created, in order
	post := func(text string) {
		t.Helper()
		resp, err := client.Post("http://"+addr+"/channel"+res, "application/json", strings.NewReader(`{"text":`+jsonString(text)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ ID string }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusCreated || body.ID == "" {
			t.Fatalf("POST %s: %s, %v", res, resp.Status, err)
		}
		posted = append(posted, body.ID)
	}
	post("before the page")

	browser := newBrowser(t)
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &tab{t: t, name: "page", ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // creates the tab: no timeout
		t.Fatalf("opening a tab: %v", err)
	}
	step, cancelStep := context.WithTimeout(ctx, wait)
	defer cancelStep()
	if err := chromedp.Do(step, chromedp.Navigate("http://"+sniff.Addr+"/app/")); err != nil {
		t.Fatalf("navigating: %v", err)
	}
	// seen.states: each state's list of children (and whether it was the
	// first); seen.creates: the child of each notification, in order;
	// seen.after: the children created after the last state.
	p.eval(`import("./reso.js").then((m) => {
		window.seen = { states: [], creates: [], after: [], errors: 0 };
		m.watch("/channel`+res+`", {
			onState: (s, info) => {
				seen.states.push({ first: info.first, ids: Array.isArray(s.entity) ? [...s.entity] : null });
				seen.after = [];
			},
			onNotification: (n) => {
				if (n.create) {
					seen.creates.push(n.create);
					seen.after.push(n.create);
				}
			},
			onError: () => seen.errors++,
		});
		return true;
	})`, "true")
	p.until(`seen.states.length === 1`)
	p.eval(`JSON.stringify(seen.states)`, jsonString(`[{"first":true,"ids":`+jsonList(posted)+`}]`))
	post("watched")
	p.until(`seen.creates.length === 1`)

	// kill -9 while the page is kept away; the restarted server (same
	// port, same database) gets two changes before the page is back.
	sniff.setDown(true)
	cs.server.kill()
	p.until(`seen.errors > 0`) // the EventSource noticed the end of its stream
	before := len(sniff.lastEventIDs())
	cs.launch()
	post("while away 1")
	post("while away 2")
	sniff.setDown(false)

	// The page's EventSource reconnects by itself, with the id of the
	// last event it had.
	p.until(`seen.after.length === 3 || (seen.states.length === 2 && seen.states[1].ids.length === 4)`)
	ids := sniff.lastEventIDs()
	if len(ids) <= before || ids[len(ids)-1] == "" {
		t.Fatalf("the EventSource's requests carried Last-Event-ID %q (%d before the restart): want the reconnect after it to carry one", ids, before)
	}
	post("after")
	want := jsonList(posted)
	// What the page knows: the last state's children and those created
	// since; each change once.
	known := `JSON.stringify([...(seen.states.at(-1).ids), ...seen.after])`
	p.until(known + ` === ` + jsonString(want))
	p.eval(`new Set(seen.creates).size === seen.creates.length`, "true")
	states := p.eval(`JSON.stringify(seen.states.map((s) => s.first))`, "")
	switch states {
	case `"[true]"`: // resumed: the missed changes came as notifications
		p.eval(`JSON.stringify(seen.creates)`, jsonString(jsonList(posted[1:])))
	case `"[true,false]"`: // not resumed: the state came again, with the changes made while away
		p.eval(`JSON.stringify(seen.after)`, jsonString(jsonList(posted[4:])))
	default:
		t.Fatalf("states: %s, want [true] (resumed) or [true,false] (the state again)", states)
	}
	t.Logf("states %s; Last-Event-IDs sent: %q", states, ids)
}

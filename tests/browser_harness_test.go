package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
)

// chromiumPath returns the headless browser to drive: $RESO_CHROMIUM, else
// the first of chromium, chromium-browser, google-chrome on PATH. Without
// one the test is skipped, unless RESO_REQUIRE_BROWSER is set or CI=true
// (as .ci/run does), which makes it fail.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RESO_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found (chromium, chromium-browser or google-chrome on PATH, or RESO_CHROMIUM): install Debian's chromium to run the browser tests"
	if requireTools() {
		t.Fatal(msg + " (RESO_REQUIRE_BROWSER is set or CI=true)")
	}
	t.Skip(msg)
	return ""
}

// newBrowser starts headless Chromium for t and returns its context; the
// browser ends with t.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // tests often run as root in a container
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		// Its singleton socket too, which Chromium makes under TMPDIR and
		// leaves there when it is killed at the test's end.
		chromedp.Env("TMPDIR="+t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser and lives as long as bctx: no
	// timeout on it (see chromedp.Run).
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(bctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("starting %s: %v", chromiumPath(t), err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the browser did not start within 60 s")
	}
	return bctx
}

// tab is one page of the browser.
type tab struct {
	t    *testing.T
	name string
	ctx  context.Context
}

// openTab opens a tab in a browser context of its own (its own cookies,
// as a second user would have), navigates to origin+blank (any document
// of that origin the browser renders, so the page is same-origin) and
// replaces that document by the HTML at origin+page. The trip through a
// rendered document is needed because reso's /file/ serves every file as
// application/octet-stream, which a browser downloads instead of showing.
func openTab(t *testing.T, browser context.Context, name, origin, blank, page string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &tab{t: t, name: name, ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // creates the tab: no timeout
		t.Fatalf("%s: opening a tab: %v", name, err)
	}
	step, cancelStep := context.WithTimeout(ctx, wait)
	defer cancelStep()
	if err := chromedp.Do(step, chromedp.Navigate(origin+blank)); err != nil {
		t.Fatalf("%s: navigating to %s: %v", name, origin+blank, err)
	}
	p.eval(`fetch(`+jsonString(page)+`).then((r) => {
		if (!r.ok) throw new Error("GET `+page+`: " + r.status);
		return r.text();
	}).then((html) => {
		document.open();
		document.write(html);
		document.close();
		return typeof window.page === "object";
	})`, "true")
	return p
}

// eval evaluates a JavaScript expression in the tab, waits for it when it
// is a promise, and returns its value as JSON; when want is not "" the
// value must be exactly that JSON.
func (p *tab) eval(js, want string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 2*wait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("%s: %s: %v", p.name, js, err)
	}
	if want != "" && string(v) != want {
		p.t.Errorf("%s: %s\n got %s\nwant %s", p.name, js, v, want)
	}
	return string(v)
}

// waitFor waits in the tab for an item of page.notes or page.events that
// the JavaScript predicate pred (an arrow function) accepts, and returns
// it as JSON.
func (p *tab) waitFor(list, pred string) string {
	p.t.Helper()
	return p.eval(fmt.Sprintf("page.waitFor(%q, %s, %d)", list, pred, wait.Milliseconds()), "")
}

// TestBrowserHarness checks the browser harness and the test page without
// reso: a plain server stands in for it, serving the page the way reso's
// /file/ does (application/octet-stream), a WebSocket at /channel that
// checks the Origin like reso (same host only) and answers every message,
// and one Server-Sent Event at /channel/h.
func TestBrowserHarness(t *testing.T) {
	t.Parallel()
	html, err := os.ReadFile("testdata/channel_page.html")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /plain/config", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "config")
	})
	mux.HandleFunc("GET /file/channel_page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(html)
	})
	mux.HandleFunc("GET /channel", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil) // same origin only
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			_, data, err := c.Read(r.Context())
			if err != nil {
				return
			}
			var m struct {
				MsgID json.RawMessage `json:"msg_id"`
			}
			json.Unmarshal(data, &m)
			c.Write(r.Context(), websocket.MessageText, []byte(`{"notify":"NOTIFY","resource":"/h","data":{"n":1},"from":"fake","seq":1}`))
			c.Write(r.Context(), websocket.MessageText, []byte(`{"msg_id":`+string(m.MsgID)+`,"code":"success"}`))
		}
	})
	mux.HandleFunc("GET /channel/h", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" {
			http.Error(w, "not an EventSource", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: 5\ndata: {\"state\":true}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close) // after the browser's cleanup, which ends its connections

	b := newBrowser(t)
	p := openTab(t, b, "page", srv.URL, "/plain/config", "/file/channel_page.html")
	p.eval(`page.connect()`, "true")
	p.eval(`page.send({method: "SUBSCRIBE", resource: "/h"})`, `{"msg_id":"page-1","code":"success"}`)
	p.waitFor("notes", `(n) => n.notify === "NOTIFY" && n.data.n === 1`)
	p.eval(`page.listen("/channel/h")`, "true")
	p.eval(`page.waitFor("events", (e) => e.id === "5", 15000)`, `{"id":"5","data":{"state":true}}`)
	p.eval(`page.problems`, `[]`)
}

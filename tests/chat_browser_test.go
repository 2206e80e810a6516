package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// openApp opens url in a tab of a browser context of its own (its own
// cookies and storage, as a second person would have) and waits until the
// page's chat is ready.
func openApp(t *testing.T, browser context.Context, name, url string) *tab {
	t.Helper()
	return openPage(t, browser, name, url, `window.chat && window.chat.ready`)
}

// openPage opens url in a tab of a browser context of its own and waits
// until the JavaScript expression ready is true.
func openPage(t *testing.T, browser context.Context, name, url, ready string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &tab{t: t, name: name, ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // creates the tab: no timeout
		t.Fatalf("%s: opening a tab: %v", name, err)
	}
	step, cancelStep := context.WithTimeout(ctx, wait)
	defer cancelStep()
	if err := chromedp.Do(step, chromedp.Navigate(url)); err != nil {
		t.Fatalf("%s: navigating to %s: %v", name, url, err)
	}
	p.until(ready)
	return p
}

// until waits in the tab until the JavaScript expression is true.
func (p *tab) until(cond string) {
	p.t.Helper()
	p.eval(fmt.Sprintf(`new Promise((resolve, reject) => {
		const deadline = Date.now() + %d;
		const check = () => {
			let ok = false;
			try { ok = !!(%s); } catch (e) {}
			if (ok) return resolve(true);
			if (Date.now() > deadline) return reject(new Error("waited for: " + %s));
			setTimeout(check, 20);
		};
		check();
	})`, wait.Milliseconds(), cond, jsonString(cond)), "true")
}

// TestChatBrowser runs the example app (examples/chat) in headless
// Chromium, served by reso itself with -www: two people chat, see each
// other online and typing; reso is killed with -9 and started again on
// the same database and address; both pages reconnect by themselves, and
// show every message exactly once, those sent while one of them was still
// away included. reso.js's watch follows the messages over EventSource on
// both pages too: it resumes after a drop and reloads after the restart.
func TestChatBrowser(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // skips early without a browser
	app, err := filepath.Abs("../examples/chat")
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	// Compiled only: a kill -9 of the server leaves an isolated
	// plugin's process to notice on its own, which is not this test's
	// subject (tests/channel_crash_test.go covers plugin processes).
	cs := startChannel(t, allModes[0], "-www", app, "-addr", addr)
	// B reaches reso through a proxy that the test takes down, so that B
	// stays away while A comes back (the page and its WebSocket share the
	// proxy's origin).
	proxy := newProxy(t, addr)
	path := "/app/?room=" + uniq("r")
	browser := newBrowser(t)
	a := openApp(t, browser, "A", "http://"+addr+path+"&name=alice")
	b := openApp(t, browser, "B", "http://"+proxy.Addr+path+"&name=bob")

	const both = `JSON.stringify(chat.online()) === '["alice","bob"]'`
	a.until(both)
	b.until(both)

	a.eval(`chat.send("hello from alice")`, "true")
	b.until(`chat.messages().includes("alice: hello from alice")`)
	b.eval(`chat.send("hi alice")`, "true")
	msgs := `JSON.stringify(chat.messages())`
	want := []string{"alice: hello from alice", "bob: hi alice"}
	a.until(msgs + ` === ` + jsonString(jsonList(want)))
	b.until(msgs + ` === ` + jsonString(jsonList(want)))

	// Typing notices travel by NOTIFY.
	b.eval(`chat.typing(), true`, "true")
	a.until(`chat.typingText() === "bob is typing…"`)

	// Both also follow the room's messages with reso.js's watch (a GET
	// kept open over EventSource).
	watchJS := `import("./reso.js").then((m) => {
		window.seen = { states: [], notes: [], ids: [] };
		m.watch("/channel/chat/rooms/" + chat.room() + "/messages", {
			onState: (s, info) => {
				seen.states.push(info.first);
				seen.ids = Array.isArray(s.entity) ? [...s.entity] : [];
			},
			onNotification: (n) => {
				seen.notes.push(n.seq);
				if (n.create) seen.ids.push(n.create);
			},
		});
		return true;
	})`
	a.eval(watchJS, "true")
	b.eval(watchJS, "true")
	a.until(`seen.states.length === 1`)
	b.until(`seen.states.length === 1`)
	a.eval(`chat.send("watched")`, "true")
	want = append(want, "alice: watched")
	a.until(`seen.notes.length === 1`)
	b.until(`seen.notes.length === 1`)

	// B's network drops for a while (the server stays): its WebSocket and
	// its EventSource resume with what they missed, recovered, once.
	proxy.setDown(true)
	proxy.cut()
	b.until(`chat.state() !== "open"`)
	a.eval(`chat.send("during the drop")`, "true")
	want = append(want, "alice: during the drop")
	proxy.setDown(false)
	b.until(msgs + ` === ` + jsonString(jsonList(want)))
	b.until(`seen.notes.length === 2`)
	// The EventSource resumed with Last-Event-ID: no second state.
	b.eval(`JSON.stringify(seen.states)`, `"[true]"`)
	b.eval(`seen.ids.length`, strconv.Itoa(len(want)))

	// kill -9; B stays away while A comes back and writes.
	proxy.setDown(true)
	cs.server.kill()
	a.until(`chat.state() !== "open"`)
	b.until(`chat.state() !== "open"`)
	cs.launch()
	a.until(`chat.state() === "open"`)
	a.eval(`chat.send("while bob was away")`, "true")
	a.eval(`chat.send("still away")`, "true")
	b.eval(`chat.state() !== "open"`, "true")
	proxy.setDown(false)
	b.until(`chat.state() === "open"`)

	want = append(want, "alice: while bob was away", "alice: still away")
	b.until(msgs + ` === ` + jsonString(jsonList(want)))
	b.eval(`chat.send("back")`, "true")
	want = append(want, "bob: back")
	a.until(msgs + ` === ` + jsonString(jsonList(want)))
	b.until(msgs + ` === ` + jsonString(jsonList(want)))
	// Both are online again (their old presences went with the restart).
	a.until(both)
	b.until(both)

	// After the restart each watch's stream could not resume, so it got
	// the state again; with the notifications since, it knows every
	// message once, and the notifications came once each, in seq order.
	for _, p := range []*tab{a, b} {
		p.until(`seen.states.length === 2`)
		p.until(`seen.ids.length === ` + strconv.Itoa(len(want)))
		p.eval(`new Set(seen.ids).size`, strconv.Itoa(len(want)))
		p.eval(`seen.notes.every((s, i) => i === 0 || s > seen.notes[i - 1])`, "true")
		p.eval(`JSON.stringify(seen.states)`, `"[true,false]"`)
	}

	// A third person's page, opened now, reads the same history.
	c := openApp(t, browser, "C", "http://"+addr+path+"&name=carol")
	c.until(msgs + ` === ` + jsonString(jsonList(want)))
	a.until(`JSON.stringify(chat.online()) === '["alice","bob","carol"]'`)
}

// jsonList returns the strings as a JSON array.
func jsonList(items []string) string {
	out := "["
	for i, s := range items {
		if i > 0 {
			out += ","
		}
		out += jsonString(s)
	}
	return out + "]"
}

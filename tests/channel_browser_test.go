package tests

import (
	"os"
	"testing"
)

// TestChannelBrowser drives headless Chromium against reso: reso serves
// the test page (testdata/channel_page.html) from its own directory under
// /file/, so the page is same-origin; two pages, each in a browser context
// of its own, use the browser's own WebSocket and EventSource. Both
// subscribe to a room over the WebSocket and watch it with an EventSource;
// each changes the room and sees the other's change arrive both ways.
func TestChannelBrowser(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // skips early without a browser
	html, err := os.ReadFile("testdata/channel_page.html")
	if err != nil {
		t.Fatal(err)
	}
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		page := cs.writePage("channel_page.html", string(html))
		browser := newBrowser(t)
		a := openTab(t, browser, "A", cs.URL, "/plain/config", page)
		b := openTab(t, browser, "B", cs.URL, "/plain/config", page)
		room := "/" + uniq("room-")
		R := jsonString(room)

		a.eval(`page.connect()`, "true")
		b.eval(`page.connect()`, "true")
		b.eval(`page.send({method: "PUT", resource: `+R+`, entity: {topic: "test"}, persistent: true})`,
			`{"msg_id":"page-1","code":"success"}`)
		epoch := ""
		for i, p := range []*tab{a, b} {
			want := `{"msg_id":"page-` + string(rune('1'+i)) + `","code":"success","epoch":"E"}`
			got, e := withoutEpoch(p.eval(`page.send({method: "SUBSCRIBE", resource: `+R+`})`, ""))
			if got != want || epoch != "" && e != epoch {
				t.Errorf("%s: SUBSCRIBE: %s (epoch %q), want %s (epoch %q)", p.name, got, e, want, epoch)
			}
			epoch = e
			p.eval(`page.listen("/channel`+room+`")`, "true")
			// The stream's first event is the room's state.
			p.waitFor("events", `(e) => e.data.entity && e.data.entity.topic === "test"`)
		}

		// B writes, A sees it over its WebSocket and its EventSource.
		b.eval(`page.send({method: "PUT", resource: `+jsonString(room+"/b")+`, entity: {text: "from B"}})`,
			`{"msg_id":"page-3","code":"success"}`)
		a.waitFor("notes", `(n) => n.notify === "UPDATE" && n.resource === `+R+` && n.update === "b" && n.entity.text === "from B" && n.seq > 0`)
		a.waitFor("events", `(e) => e.data.notify === "UPDATE" && e.data.update === "b" && e.id === `+jsonString(epoch+":")+` + e.data.seq`)

		// A writes, B sees it both ways too.
		a.eval(`page.send({method: "PUT", resource: `+jsonString(room+"/a")+`, entity: {text: "from A"}})`,
			`{"msg_id":"page-2","code":"success"}`)
		b.waitFor("notes", `(n) => n.notify === "UPDATE" && n.resource === `+R+` && n.update === "a" && n.entity.text === "from A"`)
		b.waitFor("events", `(e) => e.data.notify === "UPDATE" && e.data.update === "a" && e.id === `+jsonString(epoch+":")+` + e.data.seq`)

		// A NOTIFY from A reaches B with A's client id (and counts four
		// subscribers: two WebSockets, two EventSources); nothing went
		// wrong.
		a.eval(`page.send({method: "NOTIFY", resource: `+R+`, data: {hello: "B"}})`,
			`{"msg_id":"page-3","code":"success","sent_count":4}`)
		from := a.waitFor("notes", `(n) => n.notify === "NOTIFY"`)
		b.eval(`page.waitFor("notes", (n) => n.notify === "NOTIFY", 15000).then((n) => JSON.stringify(n.data) + " " + (n.from === `+field(from, "from")+`))`,
			`"{\"hello\":\"B\"} true"`)
		a.eval(`page.problems`, `[]`)
		b.eval(`page.problems`, `[]`)
	})
}

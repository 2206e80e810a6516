package tests

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleBrowser drives the console page (/console/) in headless
// Chromium: two tabs, each in a browser context of its own, browse the
// same path over their own WebSockets; tab A puts a child through the
// form, and tab B's notification log and tree show it. Screenshots of both
// tabs are saved under a temporary directory (their paths are logged);
// with RESO_CONSOLE_SCREENSHOT=FILE, tab B's is also written to FILE (how
// docs/console.png is made).
func TestConsoleBrowser(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // skips early without a browser
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := startChannel(t, m)
		browser := newBrowser(t)
		room := "/" + uniq("room-")
		shots := t.TempDir()

		open := func(name string) context.Context {
			ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
			t.Cleanup(cancel)
			if err := chromedp.Do(ctx); err != nil { // creates the tab: no timeout
				t.Fatalf("%s: opening a tab: %v", name, err)
			}
			runTab(t, ctx, name+": opening the console",
				chromedp.EmulateViewport(800, 500),
				chromedp.Navigate(cs.URL+"/console/#"+room),
				chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#entity[data-found="false"]`)),
			)
			return ctx
		}
		a, b := open("A"), open("B")

		// result waits for the outcome of a form: the status line under the
		// forms starting with want.
		result := func(ctx context.Context, name, want string) {
			t.Helper()
			js := `new Promise((ok) => {
				const until = Date.now() + ` + fmt.Sprint(wait.Milliseconds()) + `;
				const f = () => {
					const text = document.getElementById("result").textContent;
					if (text.startsWith(` + jsonString(want) + `) || Date.now() > until) ok(text); else setTimeout(f, 20);
				};
				f();
			})`
			if got := valueIn(t, ctx, name+": waiting for "+want, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise)); !strings.HasPrefix(got, want) {
				t.Fatalf("%s: the form's outcome %q, want %q", name, got, want)
			}
		}

		// A gives the room an entity, then puts a child through the form.
		put := func(path, entity string) {
			runTab(t, a, "A: PUT "+path,
				chromedp.SetValue(chromedp.CSS(`#put-path`), path),
				chromedp.SetValue(chromedp.CSS(`#put-entity`), entity),
				chromedp.Click(chromedp.CSS(`#put-button`)),
			)
			result(a, "A", "PUT "+path+": done")
		}
		put(room, `{"topic": "console test"}`)
		// A's own entity pane grows with the entity a moment later, which
		// moves the forms below it: the next click waits for it, as a
		// person's would.
		runTab(t, a, "A: waiting for its entity pane",
			chromedp.WaitVisible(chromedp.CSS(`#entity[data-found="true"]`)))
		valueIn(t, a, "A: waiting for the entity", chromedp.Evaluate[bool](`new Promise((ok) => { const f = () =>
			document.getElementById("entity").textContent.includes("console test") ? ok(true) : setTimeout(f, 20); f(); })`,
			chromedp.EvalAwaitPromise))
		put(room+"/a", `{"text": "from A"}`)

		// B sees both changes arrive: the log, the tree and the entity.
		runTab(t, b, "B: waiting for A's changes",
			chromedp.WaitVisible(chromedp.CSS(`#log li[data-notify="PUT"][data-resource="`+room+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#log li[data-notify="UPDATE"][data-resource="`+room+`"][data-change="update"][data-child="a"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#tree button[data-id="a"]`)),
		)
		valueIn(t, b, "B: waiting for the entity", chromedp.Evaluate[bool](`new Promise((ok) => { const f = () =>
			document.getElementById("entity").textContent.includes("console test") ? ok(true) : setTimeout(f, 20); f(); })`,
			chromedp.EvalAwaitPromise))
		entity := valueIn(t, b, "B: reading the entity", chromedp.TextContent(chromedp.CSS(`#entity`)))
		top := valueIn(t, b, "B: reading the log", chromedp.TextContent(chromedp.CSS(`#log li:first-child`)))
		if want := "{\n  \"topic\": \"console test\"\n}"; entity != want {
			t.Errorf("B's entity pane %q, want %q", entity, want)
		}
		if !strings.Contains(top, "UPDATE update"+room+"/a") || !strings.Contains(top, `{"text":"from A"}`) {
			t.Errorf("B's newest notification %q, want the UPDATE of a", top)
		}

		// B descends into the child by clicking it; A deletes it and B's
		// pane follows.
		runTab(t, b, "B: browsing to the child",
			chromedp.Click(chromedp.CSS(`#tree button[data-id="a"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#entity[data-found="true"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#crumbs [aria-current="location"]`)),
		)
		runTab(t, a, "A: DELETE",
			chromedp.SetValue(chromedp.CSS(`#delete-path`), room+"/a"),
			chromedp.Click(chromedp.CSS(`#delete-button`)),
		)
		result(a, "A", "DELETE "+room+"/a: done")
		runTab(t, b, "B: waiting for the DELETE",
			chromedp.WaitVisible(chromedp.CSS(`#log li[data-notify="DELETE"][data-resource="`+room+`/a"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#entity[data-found="false"]`)),
			chromedp.Click(chromedp.CSS(`#crumbs li:nth-last-child(2) button`)),
			chromedp.WaitVisible(chromedp.CSS(`#entity[data-found="true"]`)),
		)

		// A posts a child through the POST form, with the id it wants and
		// with a fresh one; B's tree lists them.
		post := func(id, entity string) {
			// chromedp's SetValue and Clear fail to set "".
			valueIn(t, a, "A: the POST id", chromedp.Evaluate[bool](`(document.getElementById("post-id").value = `+jsonString(id)+`) !== null`))
			runTab(t, a, "A: POST "+room,
				chromedp.SetValue(chromedp.CSS(`#post-path`), room),
				chromedp.SetValue(chromedp.CSS(`#post-entity`), entity),
				chromedp.Click(chromedp.CSS(`#post-button`)),
			)
			result(a, "A", "POST "+room+": done, id ")
		}
		post("notes", `{"text": "posted by A"}`)
		post("", `{"n": 2}`)
		runTab(t, b, "B: waiting for A's posts",
			chromedp.WaitVisible(chromedp.CSS(`#log li[data-notify="UPDATE"][data-change="create"][data-child="notes"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#tree button[data-id="notes"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#tree li:nth-child(2) button`)),
		)

		// A's connection drops: the page says so, reconnects by itself and
		// works as before.
		valueIn(t, a, "A: dropping the connection", chromedp.Evaluate[bool](`window.resoConsole.drop(), true`))
		runTab(t, a, "A: reconnecting",
			chromedp.WaitVisible(chromedp.CSS(`#status[data-state="closed"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#status[data-state="open"]`)),
		)
		if n := valueIn(t, a, "A: connections", chromedp.Evaluate[int](`window.resoConsole.connections`)); n != 2 {
			t.Errorf("A opened %d connections, want 2", n)
		}
		put(room+"/again", `{"text": "after the reconnect"}`)
		runTab(t, b, "B: waiting for the change after A's reconnect",
			chromedp.WaitVisible(chromedp.CSS(`#tree button[data-id="again"]`)),
		)

		// A goes up to the root by the breadcrumb: the room is listed
		// there.
		runTab(t, a, "A: browsing to the root",
			chromedp.Click(chromedp.CSS(`#crumbs li:first-child button`)),
			chromedp.WaitVisible(chromedp.CSS(`#tree button[data-id="`+room[1:]+`"]`)),
		)

		for _, p := range []struct {
			name string
			ctx  context.Context
		}{{"A", a}, {"B", b}} {
			violations := valueIn(t, p.ctx, p.name+": CSP violations",
				chromedp.Evaluate[string](`JSON.stringify(window.resoConsole.violations)`))
			if violations != "[]" {
				t.Errorf("%s: Content-Security-Policy violations: %s", p.name, violations)
			}
			png := valueIn(t, p.ctx, p.name+": screenshot", chromedp.CaptureScreenshot())
			file := filepath.Join(shots, "console-"+m.name+"-"+p.name+".png")
			if err := os.WriteFile(file, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot of tab %s: %s", p.name, file)
			if out := os.Getenv("RESO_CONSOLE_SCREENSHOT"); out != "" && p.name == "B" && m.name == modes()[0].name {
				small, err := paletted(png)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(out, small, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot for docs/operations.md: %s (%d bytes)", out, len(small))
			}
		}
	})
}

// runTab runs actions in a browser tab within the test's wait.
func runTab(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*wait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// valueIn runs an action that gives a value in a browser tab within the
// test's wait.
func valueIn[T any](t *testing.T, ctx context.Context, what string, action chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*wait)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// paletted re-encodes a PNG screenshot with a palette of its 256 most
// frequent colors (others take the nearest one, no dithering) and the best
// compression: a fraction of the size, which a committed image wants.
func paletted(data []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	counts := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := make([]color.RGBA, 0, len(counts))
	for c := range counts {
		colors = append(colors, c)
	}
	sort.Slice(colors, func(i, j int) bool {
		if counts[colors[i]] != counts[colors[j]] {
			return counts[colors[i]] > counts[colors[j]]
		}
		a, b := colors[i], colors[j]
		return uint32(a.R)<<16|uint32(a.G)<<8|uint32(a.B) < uint32(b.R)<<16|uint32(b.G)<<8|uint32(b.B)
	})
	if len(colors) > 256 {
		colors = colors[:256]
	}
	pal := make(color.Palette, len(colors))
	for i, c := range colors {
		pal[i] = c
	}
	out := image.NewPaletted(b, pal)
	draw.Draw(out, b, img, b.Min, draw.Src)
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// startChromium opens reso's page (served by reso with -www) in headless
// Chromium, makes a Channel there with reso.js's defaults, subscribes,
// and reports each state the page logs ("state <state>" on its console),
// with the time the console event arrived.
func startChromium(c config, addr string) (*clientProc, error) {
	path := c.chromium
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		return nil, errors.New("no Chromium on PATH: pass -chromium")
	}
	dir, err := os.MkdirTemp("", "reso-reconnect-chromium-")
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(dir),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	cl := &clientProc{name: "chromium", states: make(chan report, 1024)}
	cl.stop = func() {
		cancel()
		cancelAlloc()
		os.RemoveAll(dir)
	}
	if err := chromedp.Do(ctx); err != nil { // starts the browser: no timeout
		cl.stop()
		return nil, err
	}
	err = chromedp.Listen(ctx, func(ev any) {
		e, ok := ev.(*runtime.EventConsoleAPICalled)
		if !ok || len(e.Args) == 0 {
			return
		}
		now := time.Now()
		var s string
		if json.Unmarshal(e.Args[0].Value, &s) != nil {
			return
		}
		if st, ok := strings.CutPrefix(s, "state "); ok {
			select {
			case cl.states <- report{state: st, at: now}:
			default:
			}
		}
	})
	if err != nil {
		cl.stop()
		return nil, err
	}
	step, cancelStep := withTimeout(ctx)
	defer cancelStep()
	if err := chromedp.Do(step, chromedp.Navigate("http://"+addr+"/app/")); err != nil {
		cl.stop()
		return nil, err
	}
	_, err = chromedp.Run(step, chromedp.Evaluate[bool](`import("./reso.js").then(async (m) => {
			const ch = new m.Channel("/channel");
			ch.on("state", (s) => console.log("state " + s));
			await ch.opened();
			await ch.subscribe("/bench/reconnect", () => {});
			return true;
		})`, chromedp.EvalAwaitPromise))
	if err != nil {
		cl.stop()
		return nil, err
	}
	return cl, nil
}

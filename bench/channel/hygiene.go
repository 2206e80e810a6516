package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// hygieneConfig is the disconnect-hygiene figure: cycles of connect,
// SUBSCRIBE, transient PUT, drop; then a wait until the server is back to
// where it started.
type hygieneConfig struct {
	cycles   int
	conc     int    // cycles running at once
	resource string // subscribed; transient children are resource/h<i>
	rst      bool   // drop with a TCP reset instead of a FIN
	prime    bool   // one clean cycle before the baseline, to start what the server starts lazily
	silent   bool   // keep the sockets open but never read again (a dead peer)
	slack    int64  // goroutines above the baseline that still count as back
	wait     time.Duration
	poll     time.Duration
	timeout  time.Duration // for the cycles
	readBuf  int
}

// hygieneResult is the state before the cycles and when the server was
// last looked at.
type hygieneResult struct {
	cycles          int
	cycleTime       time.Duration
	baseGor, gor    int64
	baseRSS, rss    int64 // KiB; 0 without -pid
	children        int64 // GET resource?deep=0 count; -1 before any check
	subscribers     int64 // sent_count of a NOTIFY; -1 before any check
	notifyReason    string
	clean           bool
	cleanAfter      time.Duration // from the last drop to clean (or to giving up)
	checks          int
	silentConnsHeld int
}

// runHygiene runs the cycles and polls the server until it is clean or
// cfg.wait has passed.
func runHygiene(d *dialer, p *probe, cfg hygieneConfig) (hygieneResult, error) {
	res := hygieneResult{children: -1, subscribers: -1}
	var err error
	if cfg.prime {
		if err := prime(d, cfg.resource); err != nil {
			return res, fmt.Errorf("priming: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if res.baseGor, err = p.goroutines(); err != nil {
		return res, err
	}
	res.baseRSS, _ = p.rssKB()
	var held []*websocket.Conn // silent mode: open until the end
	var heldMu sync.Mutex
	defer func() {
		for _, c := range held {
			c.NetConn().Close()
		}
	}()
	start := time.Now()
	deadline := start.Add(cfg.timeout)
	err = forEach(cfg.cycles, cfg.conc, func(i int) error {
		if time.Now().After(deadline) {
			return fmt.Errorf("cycles took longer than %v", cfg.timeout)
		}
		c, err := d.dial()
		if err != nil {
			return err
		}
		// Each request waits at most 10s, whatever the overall deadline.
		wait := time.Now().Add(10 * time.Second)
		if wait.After(deadline) {
			wait = deadline
		}
		if _, err := mustSucceed(c, message{Method: "SUBSCRIBE", Resource: cfg.resource, MsgID: 1}, wait); err != nil {
			c.Close()
			return err
		}
		child := cfg.resource + "/h" + strconv.Itoa(i)
		if _, err := mustSucceed(c, message{Method: "PUT", Resource: child, MsgID: 2, Entity: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)}, wait); err != nil {
			c.Close()
			return err
		}
		if cfg.silent {
			heldMu.Lock()
			held = append(held, c)
			heldMu.Unlock()
			return nil
		}
		return closeRaw(c, cfg.rst)
	})
	res.cycleTime = time.Since(start)
	if err != nil {
		return res, err
	}
	res.cycles = cfg.cycles
	res.silentConnsHeld = len(held)

	dropped := time.Now()
	for {
		res.checks++
		res.gor, err = p.goroutines()
		if err != nil {
			return res, err
		}
		if res.gor <= res.baseGor+cfg.slack {
			if err := check(d, cfg.resource, &res); err != nil {
				return res, err
			}
			res.clean = res.children == 0 && res.subscribers == 0
		}
		res.cleanAfter = time.Since(dropped)
		if res.clean || res.cleanAfter >= cfg.wait {
			break
		}
		time.Sleep(cfg.poll)
	}
	res.rss, _ = p.rssKB()
	return res, nil
}

// prime runs one cycle that ends with a close frame, on a sibling of
// resource, so that whatever the server starts on first use is running
// when the baseline is taken.
func prime(d *dialer, resource string) error {
	c, err := d.dial()
	if err != nil {
		return err
	}
	defer closeClean(c)
	deadline := time.Now().Add(10 * time.Second)
	other := resource + "-prime"
	if _, err := mustSucceed(c, message{Method: "SUBSCRIBE", Resource: other, MsgID: 1}, deadline); err != nil {
		return err
	}
	_, err = mustSucceed(c, message{Method: "PUT", Resource: other + "/h", MsgID: 2, Entity: json.RawMessage(`{}`)}, deadline)
	return err
}

// check looks at the resource from a fresh connection: how many children
// it has left (GET ?deep=0; "not found" counts as none) and how many
// subscribers a NOTIFY reaches ("no subscriber" counts as none).
func check(d *dialer, resource string, res *hygieneResult) error {
	c, err := d.dial()
	if err != nil {
		return err
	}
	defer closeClean(c)
	deadline := time.Now().Add(10 * time.Second)
	r, err := call(c, message{Method: "GET", Resource: resource + "?deep=0", MsgID: 1}, deadline)
	if err != nil {
		return err
	}
	switch {
	case r.Code == "success":
		var e struct{ Count *int64 }
		if json.Unmarshal(r.Entity, &e) != nil || e.Count == nil {
			return fmt.Errorf("GET %s?deep=0: entity %s, want {\"count\": n}", resource, r.Entity)
		}
		res.children = *e.Count
	case r.Reason == "not found":
		res.children = 0
	default:
		return fmt.Errorf("GET %s?deep=0: %s (%s)", resource, r.Code, r.Reason)
	}
	r, err = call(c, message{Method: "NOTIFY", Resource: resource, MsgID: 2, Data: json.RawMessage(`"hygiene check"`)}, deadline)
	if err != nil {
		return err
	}
	res.notifyReason = r.Reason
	switch {
	case r.Code == "success" && r.SentCount != nil:
		res.subscribers = *r.SentCount
	case r.Code == "success":
		return errors.New("NOTIFY: success reply without sent_count")
	case r.Reason == "no subscriber":
		res.subscribers = 0
	default:
		return fmt.Errorf("NOTIFY %s: %s (%s)", resource, r.Code, r.Reason)
	}
	return nil
}

// print writes the hygiene figures.
func (r hygieneResult) print(w io.Writer, cfg hygieneConfig) {
	how := "closed the TCP connection (FIN) without a close frame"
	switch {
	case cfg.silent:
		how = "kept the socket open and stopped reading (a dead peer)"
	case cfg.rst:
		how = "reset the TCP connection (RST) without a close frame"
	}
	fmt.Fprintf(w, "hygiene: %d cycles (%d at once) of connect, SUBSCRIBE %s, transient PUT %s/h<n>, then %s; cycles took %.1fs (%.0f/s)\n",
		r.cycles, cfg.conc, cfg.resource, cfg.resource, how, r.cycleTime.Seconds(), float64(r.cycles)/r.cycleTime.Seconds())
	state := "CLEAN"
	if !r.clean {
		state = "NOT CLEAN"
	}
	fmt.Fprintf(w, "  %s after %.2fs (%d checks, giving up after %v)\n", state, r.cleanAfter.Seconds(), r.checks, cfg.wait)
	fmt.Fprintf(w, "  goroutines     %d (baseline %d, slack %d)\n", r.gor, r.baseGor, cfg.slack)
	fmt.Fprintf(w, "  children left  %d (GET %s?deep=0; -1: not checked, goroutines never back)\n", r.children, cfg.resource)
	fmt.Fprintf(w, "  subscribers    %d (NOTIFY sent_count from a fresh connection; reason %q)\n", r.subscribers, r.notifyReason)
	if r.baseRSS > 0 {
		fmt.Fprintf(w, "  server RSS     %.1f MiB (baseline %.1f MiB)\n", float64(r.rss)/1024, float64(r.baseRSS)/1024)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// A writes phase is one mode measured over its own connections.
type phase struct {
	mode  string // "persistent", "transient" or "notify"
	conns int
}

// parsePhases reads MODE@CONNS,... (e.g. "notify@32,persistent@32").
func parsePhases(s string, maxConns int) ([]phase, error) {
	var ps []phase
	for _, f := range strings.Split(s, ",") {
		mode, n, ok := strings.Cut(strings.TrimSpace(f), "@")
		conns, err := strconv.Atoi(n)
		if !ok || err != nil || conns < 1 || conns > maxConns {
			return nil, fmt.Errorf("phase %q: want MODE@CONNS with 1 <= CONNS <= %d", f, maxConns)
		}
		switch mode {
		case "persistent", "transient", "notify":
		default:
			return nil, fmt.Errorf("phase %q: mode is persistent, transient or notify", f)
		}
		ps = append(ps, phase{mode, conns})
	}
	return ps, nil
}

// writesConfig is the settings shared by the phases.
type writesConfig struct {
	window   int // unanswered requests per connection
	dialConc int
	prefix   string // resources are prefix + run + connection + key
	keys     int64  // 0: every PUT creates a new resource; k: each connection cycles over k
	warmup   time.Duration
	dur      time.Duration
	maxOps   int64 // most requests per phase
	timeout  time.Duration
	readBuf  int
}

// writesResult is what one phase measured over its measured time.
type writesResult struct {
	phase
	elapsed              time.Duration
	ok, failed           int64
	serverCPU, clientCPU time.Duration
	serverSys            time.Duration // the system part of serverCPU
	serverFaults         int64         // the server's minor page faults
	firstFailure         string        // reason of the first failed reply of the whole phase
	capped               bool          // maxOps was reached: the rate is too low
}

// runWrites measures one phase: each connection sends its requests with
// at most window unanswered and counts the replies.
func runWrites(d *dialer, p *probe, cfg writesConfig, ph phase, run string) (writesResult, error) {
	res := writesResult{phase: ph}
	conns := make([]*websocket.Conn, ph.conns)
	defer func() {
		for _, c := range conns {
			if c != nil {
				closeClean(c)
			}
		}
	}()
	if err := forEach(ph.conns, cfg.dialConc, func(i int) error {
		c, err := d.dial()
		conns[i] = c
		return err
	}); err != nil {
		return res, err
	}

	var ok, failed, issued atomic.Int64
	var stop atomic.Bool
	done := make(chan struct{})
	var failMu sync.Mutex
	var firstFailure string
	errs := make(chan error, 2*ph.conns)
	// answered is closed once maxOps requests have their replies: a
	// capped run has nothing more to measure.
	answered := make(chan struct{})
	var answeredOnce sync.Once
	var wg sync.WaitGroup
	defer func() { // after the connections are closed (deferred above)
		stop.Store(true)
		close(done)
		for _, c := range conns {
			closeClean(c)
		}
		wg.Wait()
	}()
	for i, c := range conns {
		tokens := make(chan struct{}, cfg.window)
		wg.Add(2)
		go func() { // replies
			defer wg.Done()
			buf := make([]byte, 0, 512)
			for {
				var err error
				buf, err = readFrame(c, buf)
				if err != nil {
					if !stop.Load() {
						errs <- err
					}
					return
				}
				if _, isReply := msgID(buf); !isReply {
					continue
				}
				if succeeded(buf) {
					ok.Add(1)
				} else if failed.Add(1) == 1 {
					var r reply
					json.Unmarshal(buf, &r)
					failMu.Lock()
					firstFailure = r.Reason
					failMu.Unlock()
				}
				select {
				case <-tokens:
				default: // a reply nobody waits for; the server's fault
				}
				if cfg.maxOps > 0 && ok.Load()+failed.Load() >= cfg.maxOps {
					answeredOnce.Do(func() { close(answered) })
				}
			}
		}()
		go func() { // requests
			defer wg.Done()
			var b []byte
			var n int64
			base := cfg.prefix + ph.mode[:1] + run + "/c" + strconv.Itoa(i)
			for !stop.Load() && issued.Add(1) <= cfg.maxOps {
				select {
				case tokens <- struct{}{}:
				case <-done:
					return
				}
				n++
				key := n
				if cfg.keys > 0 {
					key = n % cfg.keys
				}
				switch ph.mode {
				case "persistent", "transient":
					b = appendPut(b[:0], base, key, n, ph.mode == "persistent")
				default:
					b = appendRequest(b[:0], "NOTIFY", base, n, `,"data":1`)
				}
				if err := c.WriteMessage(websocket.TextMessage, b); err != nil {
					if !stop.Load() {
						errs <- err
					}
					return
				}
			}
		}()
	}

	time.Sleep(cfg.warmup)
	ok0, f0, t0 := ok.Load(), failed.Load(), time.Now()
	su0, ss0 := p.cpuSplit()
	sf0 := p.minorFaults()
	cc0 := selfCPU()
	var runErr error
	select {
	case <-time.After(cfg.dur):
	case <-answered:
	case runErr = <-errs:
	}
	res.ok, res.failed, res.elapsed = ok.Load()-ok0, failed.Load()-f0, time.Since(t0)
	su1, ss1 := p.cpuSplit()
	res.serverCPU, res.serverSys, res.clientCPU = su1+ss1-su0-ss0, ss1-ss0, selfCPU()-cc0
	res.serverFaults = p.minorFaults() - sf0
	res.capped = issued.Load() > cfg.maxOps
	if runErr != nil {
		return res, runErr
	}
	failMu.Lock()
	res.firstFailure = firstFailure
	failMu.Unlock()
	return res, nil
}

// print writes one phase's line; base is the notify phase it is compared
// with, or nil.
func (r writesResult) print(w io.Writer, base *writesResult) {
	secs := r.elapsed.Seconds()
	what := map[string]string{
		"persistent": "persistent PUTs",
		"transient":  "transient PUTs",
		"notify":     "NOTIFY round trips (no subscriber, baseline)",
	}[r.mode]
	fmt.Fprintf(w, "  %-11s %4d conns %10.0f /s", r.mode, r.conns, float64(r.ok+r.failed)/secs)
	if r.mode != "notify" {
		fmt.Fprintf(w, " succeeded (%d failed)", r.failed)
	}
	if base != nil {
		fmt.Fprintf(w, "  ratio to notify@%d %.3f", base.conns, r.ratio(*base))
	}
	if r.serverCPU > 0 {
		ops := float64(max(r.ok+r.failed, 1))
		fmt.Fprintf(w, "  server CPU %.2f µs/op (system %.0f%%, %.4f page faults/op)", float64(r.serverCPU.Microseconds())/ops,
			100*float64(r.serverSys)/float64(r.serverCPU), float64(r.serverFaults)/ops)
	}
	fmt.Fprintf(w, "  client CPU %.2f µs/op  %s", float64(r.clientCPU.Microseconds())/float64(max(r.ok+r.failed, 1)), what)
	if r.capped {
		fmt.Fprint(w, " (CAPPED by -max: raise it)")
	}
	if r.firstFailure != "" && r.mode != "notify" {
		fmt.Fprintf(w, " (first failure: %s)", r.firstFailure)
	}
	fmt.Fprintln(w)
}

// ratio is r's successful operations per second over base's requests
// per second (a notify phase, whose replies all fail with "no
// subscriber").
func (r writesResult) ratio(base writesResult) float64 {
	return float64(r.ok) / float64(base.ok+base.failed) * base.elapsed.Seconds() / r.elapsed.Seconds()
}

// runWritesRounds measures the phases in order, rounds times over, each
// phase after a pause and on connections of its own, prints each phase's
// line (compared with the notify phase before it) and, for more than one
// round, each mode's ratios to notify over the rounds. The first round's
// are apart: its phases grow the server's heap into memory the process
// never touched, each new page a fault (bench/pagefault prices one), where
// the later rounds reuse what the first round's connections left when
// they closed, as a server that has been running does.
func runWritesRounds(w io.Writer, d *dialer, p *probe, cfg writesConfig, ps []phase, rounds int, run string, pause time.Duration) error {
	ratios := map[string][]float64{}
	var modes []string
	for r := 1; r <= rounds; r++ {
		if rounds > 1 {
			fmt.Fprintf(w, "round %d\n", r)
		}
		var base *writesResult
		for i, ph := range ps {
			if r > 1 || i > 0 {
				time.Sleep(pause)
			}
			res, err := runWrites(d, p, cfg, ph, run+"r"+strconv.Itoa(r))
			if err != nil {
				return fmt.Errorf("round %d, %s@%d: %w", r, ph.mode, ph.conns, err)
			}
			if ph.mode == "notify" {
				res.print(w, nil)
				base = &res
				continue
			}
			res.print(w, base)
			if base != nil {
				if ratios[ph.mode] == nil {
					modes = append(modes, ph.mode)
				}
				ratios[ph.mode] = append(ratios[ph.mode], res.ratio(*base))
			}
		}
	}
	if rounds < 2 {
		return nil
	}
	for _, m := range modes {
		rs := ratios[m]
		fmt.Fprintf(w, "%s ÷ notify over %d rounds: round 1 (a heap growing into fresh memory) %.3f; later rounds", m, rounds, rs[0])
		for _, x := range rs[1:] {
			fmt.Fprintf(w, " %.3f", x)
		}
		fmt.Fprintf(w, ", median %.3f\n", median(rs[1:]))
	}
	return nil
}

// appendPut appends the PUT of request n to base/key with entity {"n":n}
// (persistent or not), as appendRequest would, without building its
// resource and fields as strings first: the load client's own work a PUT
// is then what it is a NOTIFY.
func appendPut(b []byte, base string, key, n int64, persistent bool) []byte {
	b = append(b, `{"method":"PUT","resource":"`...)
	b = append(b, base...)
	b = append(b, '/')
	b = strconv.AppendInt(b, key, 10)
	b = append(b, `","msg_id":`...)
	b = strconv.AppendInt(b, n, 10)
	if persistent {
		b = append(b, `,"persistent":true`...)
	}
	b = append(b, `,"entity":{"n":`...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, "}}"...)
}

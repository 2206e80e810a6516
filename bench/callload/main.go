// Command callload is the load client of the call-control figure (issue
// 11): invitations delivered per second to N logged-in users (default
// 1,000) that each keep a GET open on /login/<email>, and the time from
// SEND to delivery. It speaks HTTP to a running reso with the bundled
// plugin call (docs/call.md), in its own process, started by
// bench/call-invite.sh. Every load is bounded in count and in time.
//
//	callload -addr H:P -users PREFIX -n 1000 -password PW -sender EMAIL:PW [-senders-conc 8] [-d 5s] [-pid PID]
//
// The users PREFIX<i>@bench.example (i from 0 to n-1) and the sender must
// be registered. Each user logs in (POST /login/<email>, a contact of
// 3,600 s) and opens GET /login/<email>?watch=diff (newline-delimited
// JSON); once every stream has delivered its state, the sender's
// goroutines SEND invitations {"command": "invite", "url", "id", "t"} to
// users picked at random, one request at a time each, for the measured
// time. "t" is the send time in nanoseconds since the client started
// (monotonic, same process), read back from the notification on receipt.
// Latency is from just before the SEND is written to the moment its line
// is read from the receiving stream.
//
// The sender logs in once with Basic and then sends the session cookies,
// as a browser would; the receivers use Basic for their two requests.
// With -pid the server's CPU time over the measured time is read from
// /proc.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reso-project/reso/bench/internal/latency"
	"github.com/reso-project/reso/bench/internal/proc"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "", "reso's address, HOST:PORT")
	flag.StringVar(&cfg.prefix, "users", "u", "user i is PREFIX<i>@bench.example")
	flag.IntVar(&cfg.n, "n", 1000, "logged-in users, each with one GET kept open (1 to 1,000)")
	flag.StringVar(&cfg.password, "password", "", "the users' password")
	sender := flag.String("sender", "", "the sender's credentials, EMAIL:PASSWORD")
	flag.IntVar(&cfg.conc, "senders-conc", 8, "SENDs in flight at once, one per goroutine (1 to 64)")
	flag.IntVar(&cfg.setupConc, "setup-conc", 32, "logins and streams opened at once (1 to 256)")
	flag.DurationVar(&cfg.warmup, "warmup", time.Second, "sending before measuring (at most 30s)")
	flag.DurationVar(&cfg.dur, "d", 5*time.Second, "measured time (100ms to 60s)")
	flag.Int64Var(&cfg.max, "max", 1_000_000, "most SENDs in the run (at most 10,000,000)")
	flag.DurationVar(&cfg.drain, "drain", 5*time.Second, "wait for the last deliveries (at most 1m)")
	flag.DurationVar(&cfg.timeout, "timeout", time.Minute, "longest time for the logins and streams (at most 10m)")
	flag.IntVar(&cfg.pid, "pid", 0, "the server's process id, for its CPU time (0: not measured)")
	flag.Parse()
	err := cfg.check(*sender)
	if err == nil {
		err = run(cfg, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "callload:", err)
		os.Exit(1)
	}
}

// config is one run's parameters.
type config struct {
	addr, prefix, password string
	senderEmail, senderPW  string
	n, conc, setupConc     int
	warmup, dur, drain     time.Duration
	timeout                time.Duration
	max                    int64
	pid                    int
}

// check validates the flags.
func (c *config) check(sender string) error {
	var ok bool
	c.senderEmail, c.senderPW, ok = strings.Cut(sender, ":")
	switch {
	case c.addr == "":
		return errors.New("-addr is required")
	case !ok || c.senderEmail == "":
		return errors.New("-sender EMAIL:PASSWORD is required")
	case c.n < 1 || c.n > 1000:
		return errors.New("-n: 1 to 1,000")
	case c.conc < 1 || c.conc > 64:
		return errors.New("-senders-conc: 1 to 64")
	case c.setupConc < 1 || c.setupConc > 256:
		return errors.New("-setup-conc: 1 to 256")
	case c.warmup < 0 || c.warmup > 30*time.Second:
		return errors.New("-warmup: at most 30s")
	case c.dur < 100*time.Millisecond || c.dur > time.Minute:
		return errors.New("-d: 100ms to 60s")
	case c.max < 1 || c.max > 10_000_000:
		return errors.New("-max: 1 to 10,000,000")
	case c.drain < 0 || c.drain > time.Minute:
		return errors.New("-drain: at most 1m")
	case c.timeout < time.Second || c.timeout > 10*time.Minute:
		return errors.New("-timeout: 1s to 10m")
	}
	return nil
}

// email is user i's e-mail.
func (c *config) email(i int) string {
	return c.prefix + strconv.Itoa(i) + "@bench.example"
}

// receiver is one user's GET kept open.
type receiver struct {
	email     string
	body      io.ReadCloser
	delivered atomic.Int64 // invitations received
	inWindow  atomic.Int64 // of those, received within the measured time
	other     atomic.Int64 // other lines after the state (UPDATEs ...)
	lat       latency.Hist // written by the reader only, read after it ended
	err       error        // why the stream ended early, read after it ended
}

// counts are the sender's answers.
type counts struct {
	sent, ok, waiting, failed atomic.Int64
	inWindowOK                atomic.Int64
	firstFailMu               sync.Mutex
	firstFail                 string
}

func (c *counts) fail(s string) {
	c.failed.Add(1)
	c.firstFailMu.Lock()
	if c.firstFail == "" {
		c.firstFail = s
	}
	c.firstFailMu.Unlock()
}

// run logs the users in, opens their streams, sends for warmup+dur,
// drains and prints the figures.
func run(cfg config, out io.Writer) error {
	clock := time.Now()
	base := "http://" + cfg.addr
	// One connection per stream; the setup's requests reuse a few.
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 256,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	streamCtx, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()

	// Log in and open the streams, setupConc users at a time.
	recvs := make([]*receiver, cfg.n)
	setupStart := time.Now()
	var firstErr error
	var errMu sync.Mutex
	sem := make(chan struct{}, cfg.setupConc)
	var wg sync.WaitGroup
	for i := range recvs {
		r := &receiver{email: cfg.email(i)}
		recvs[i] = r
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := r.open(ctx, streamCtx, hc, base, cfg.password); err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	fmt.Fprintf(out, "call-invite: %d users logged in, each with GET /login/<email>?watch=diff open, in %.1fs\n",
		cfg.n, time.Since(setupStart).Seconds())

	// The receivers read their streams until the end.
	var measuring atomic.Bool
	var readers sync.WaitGroup
	var dropped atomic.Int64
	for _, r := range recvs {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r.read(clock, &measuring)
			if streamCtx.Err() == nil {
				dropped.Add(1)
			} else {
				r.err = nil // ended by the client at the end of the run
			}
		}()
	}

	// The sender logs in once; its SENDs carry the session cookies.
	cookies, err := login(ctx, hc, base, cfg.senderEmail, cfg.senderPW)
	if err != nil {
		return fmt.Errorf("sender: %w", err)
	}
	var cnt counts
	var stop atomic.Bool
	var senders sync.WaitGroup
	for g := range cfg.conc {
		senders.Add(1)
		go func() {
			defer senders.Done()
			rng := rand.New(rand.NewPCG(uint64(g), uint64(clock.UnixNano())))
			var buf bytes.Buffer
			for k := 0; !stop.Load(); k++ {
				if cnt.sent.Add(1) > cfg.max {
					cnt.sent.Add(-1)
					return
				}
				target := cfg.email(rng.IntN(cfg.n))
				buf.Reset()
				fmt.Fprintf(&buf, `{"command":"invite","url":"/call/bench","id":"s%d-%d","t":%d}`,
					g, k, time.Since(clock).Nanoseconds())
				req, err := http.NewRequest("SEND", base+"/login/"+target, bytes.NewReader(buf.Bytes()))
				if err != nil {
					cnt.fail(err.Error())
					continue
				}
				req.Header.Set("Content-Type", "application/json")
				for _, c := range cookies {
					req.AddCookie(c)
				}
				resp, err := hc.Do(req)
				if err != nil {
					cnt.fail(err.Error())
					time.Sleep(10 * time.Millisecond)
					continue
				}
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				switch resp.Status {
				case "200 OK":
					cnt.ok.Add(1)
					if measuring.Load() {
						cnt.inWindowOK.Add(1)
					}
				case "202 Accepted":
					cnt.waiting.Add(1)
				default:
					cnt.fail(resp.Status + " " + strings.TrimSpace(string(b)))
				}
			}
		}()
	}
	time.Sleep(cfg.warmup)
	cpu0 := proc.CPU(cfg.pid)
	measuring.Store(true)
	t0 := time.Now()
	time.Sleep(cfg.dur)
	measuring.Store(false)
	elapsed := time.Since(t0)
	cpu1 := proc.CPU(cfg.pid)
	stop.Store(true)
	senders.Wait()

	// Drain: every 200 OK should show up on its stream.
	total := func() (n int64) {
		for _, r := range recvs {
			n += r.delivered.Load()
		}
		return n
	}
	drainEnd := time.Now().Add(cfg.drain)
	for total() < cnt.ok.Load() && time.Now().Before(drainEnd) {
		time.Sleep(20 * time.Millisecond)
	}
	stopStreams()
	for _, r := range recvs {
		r.body.Close()
	}
	readers.Wait()

	var lat latency.Hist
	var inWindow, delivered, other int64
	var streamErrs []string
	for _, r := range recvs {
		lat.Merge(&r.lat)
		inWindow += r.inWindow.Load()
		delivered += r.delivered.Load()
		other += r.other.Load()
		if r.err != nil && len(streamErrs) < 3 {
			streamErrs = append(streamErrs, r.email+": "+r.err.Error())
		}
	}
	sec := elapsed.Seconds()
	fmt.Fprintf(out, "call-invite: %d sender goroutines (one SEND in flight each), %.1fs measured after %.1fs of warm-up\n",
		cfg.conc, sec, cfg.warmup.Seconds())
	fmt.Fprintf(out, "  delivered:   %.0f invitations/s on the receiving GETs (%d in the measured time); SEND answered 200 OK %.0f/s\n",
		float64(inWindow)/sec, inWindow, float64(cnt.inWindowOK.Load())/sec)
	fmt.Fprintf(out, "  SEND to delivery (measured time): p50 %s  p99 %s  max %s  (%d samples)\n",
		us(lat.Quantile(0.50)), us(lat.Quantile(0.99)), us(lat.Max()), lat.Count())
	if cfg.pid > 0 && cpu1 >= cpu0 && inWindow > 0 {
		fmt.Fprintf(out, "  server CPU:  %.2f cores, %.1f µs per delivered invitation\n",
			(cpu1-cpu0).Seconds()/sec, float64((cpu1-cpu0).Microseconds())/float64(inWindow))
	}
	fmt.Fprintf(out, "  whole run:   sent %d, 200 OK %d, 202 waiting %d, failed %d; delivered %d; other stream lines %d; streams ended early %d\n",
		cnt.sent.Load(), cnt.ok.Load(), cnt.waiting.Load(), cnt.failed.Load(), delivered, other, dropped.Load())
	if cnt.firstFail != "" {
		fmt.Fprintf(out, "  first failure: %s\n", cnt.firstFail)
	}
	sort.Strings(streamErrs)
	for _, e := range streamErrs {
		fmt.Fprintf(out, "  stream ended early: %s\n", e)
	}
	if cnt.failed.Load() > 0 || dropped.Load() > 0 || delivered < cnt.ok.Load() {
		return fmt.Errorf("not clean: %d failed SENDs, %d streams ended early, %d delivered of %d answered 200 OK",
			cnt.failed.Load(), dropped.Load(), delivered, cnt.ok.Load())
	}
	return nil
}

// us prints a duration in microseconds or milliseconds.
func us(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%dµs", d.Microseconds())
	}
	return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000)
}

// open logs r in (POST /login/<email>) and opens its GET kept open, up to
// the state line. The stream lives until streamCtx ends.
func (r *receiver) open(ctx, streamCtx context.Context, hc *http.Client, base, password string) error {
	body := `{"contact":"sip:` + r.email + `","expires":3600}`
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/login/"+r.email, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(r.email, password)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: log in: %w", r.email, err)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.Status != "201 Created" {
		return fmt.Errorf("%s: POST /login/%s: %s %s, docs/call.md says 201 Created", r.email, r.email, resp.Status, b)
	}
	req, err = http.NewRequestWithContext(streamCtx, "GET", base+"/login/"+r.email+"?watch=diff", nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(r.email, password)
	resp, err = hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: the GET kept open: %w", r.email, err)
	}
	if resp.Status != "200 OK" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return fmt.Errorf("%s: GET /login/%s?watch=diff: %s %s", r.email, r.email, resp.Status, b)
	}
	r.body = resp.Body
	// The state comes first; a SEND before it could be taken for waiting.
	line, err := readLine(ctx, resp.Body)
	if err != nil {
		resp.Body.Close()
		return fmt.Errorf("%s: the stream's state: %w", r.email, err)
	}
	var st struct {
		Resource string `json:"resource"`
		Notify   string `json:"notify"`
	}
	if json.Unmarshal(line, &st) != nil || st.Notify != "" || st.Resource != "/login/"+r.email {
		resp.Body.Close()
		return fmt.Errorf("%s: the stream's first line %q is not its state", r.email, line)
	}
	return nil
}

// readLine reads one line byte by byte (the stream's reader starts after
// it), within ctx.
func readLine(ctx context.Context, body io.Reader) ([]byte, error) {
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var b []byte
		var one [1]byte
		for {
			n, err := body.Read(one[:])
			if n == 1 {
				if one[0] == '\n' {
					ch <- res{b, nil}
					return
				}
				b = append(b, one[0])
			}
			if err != nil {
				ch <- res{b, err}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read counts the invitations of r's stream and their latency until the
// stream ends.
func (r *receiver) read(clock time.Time, measuring *atomic.Bool) {
	sc := bufio.NewScanner(r.body)
	sc.Buffer(make([]byte, 4096), 1<<20)
	var n struct {
		Notify string `json:"notify"`
		Data   struct {
			T int64 `json:"t"`
		} `json:"data"`
	}
	for sc.Scan() {
		now := time.Since(clock)
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		n.Notify, n.Data.T = "", 0
		if err := json.Unmarshal(line, &n); err != nil || n.Notify != "NOTIFY" || n.Data.T == 0 {
			r.other.Add(1)
			continue
		}
		r.delivered.Add(1)
		if measuring.Load() {
			r.inWindow.Add(1)
			r.lat.Add(now - time.Duration(n.Data.T))
		}
	}
	r.err = sc.Err()
	if r.err == nil {
		r.err = io.EOF
	}
}

// login logs email in with Basic (POST /login/<email>, a contact) and
// returns the session cookies of the answer.
func login(ctx context.Context, hc *http.Client, base, email, password string) ([]*http.Cookie, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/login/"+email, strings.NewReader(`{"contact":"sip:`+email+`"}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(email, password)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.Status != "201 Created" {
		return nil, fmt.Errorf("POST /login/%s: %s %s", email, resp.Status, b)
	}
	if len(resp.Cookies()) == 0 {
		return nil, errors.New("the login set no session cookies")
	}
	return resp.Cookies(), nil
}

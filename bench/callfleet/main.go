// Command callfleet measures SEND delivery across the nodes of a fleet
// against one node (issue 29, docs/call.md#on-a-fleet): it starts a
// three-server NATS JetStream cluster in a child process (bench/internal/cluster), three reso
// nodes on it and one reso alone on SQLite, and on each side logs in -n
// users (default 100), each with a contact and GET
// /login/<email>?watch=diff kept open, then SENDs invitations to users
// picked at random at a fixed rate (default 100 SEND/s) for the measured
// time. On the fleet the GETs kept open are on node A and the SENDs go
// to node B, so every invitation crosses nodes. It prints, per side, p50
// and p99 from SEND to delivery (the send time is in the invitation's
// data, read on receipt in this process) and the ratios, fleet over one
// node. Every request is made as the administrator (its cookie, read
// with reso admin-token), which may register, follow and SEND for any
// user (docs/call.md). Every load is bounded in count and time, on
// loopback; it fails if a SEND fails or an invitation answered 200 OK
// never arrives.
//
//	go run ./bench/callfleet -reso PATH [-n 100] [-rate 100] [-d 10s] [-warmup 1s] [-heartbeat 10s]
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
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reso-project/reso/bench/internal/cluster"
	"github.com/reso-project/reso/bench/internal/latency"
)

func main() { cluster.Main("callfleet", run) }

// config is the command line.
type config struct {
	reso      string
	n, rate   int
	d, warmup time.Duration
	heartbeat time.Duration
}

// maxInFlight bounds the SENDs under way at once.
const maxInFlight = 256

func run() error {
	var c config
	flag.StringVar(&c.reso, "reso", "", "the reso binary")
	flag.IntVar(&c.n, "n", 100, "logged-in users, each with one GET kept open (1 to 1,000)")
	flag.IntVar(&c.rate, "rate", 100, "SENDs per second (1 to 2,000)")
	flag.DurationVar(&c.d, "d", 10*time.Second, "measured time of each side (1s to 1m)")
	flag.DurationVar(&c.warmup, "warmup", time.Second, "sending before measuring (at most 10s)")
	flag.DurationVar(&c.heartbeat, "heartbeat", 10*time.Second, "-fleet-heartbeat of the nodes")
	flag.Parse()
	switch {
	case c.reso == "":
		return errors.New("-reso is required")
	case c.n < 1 || c.n > 1000, c.rate < 1 || c.rate > 2000, c.d < time.Second || c.d > time.Minute,
		c.warmup < 0 || c.warmup > 10*time.Second:
		return errors.New("a flag is out of its range (see -h)")
	}
	// The single node's secret file is relative to its working directory,
	// the pair's.
	pair, err := cluster.StartPair(c.reso, c.heartbeat, "-secret-file", "secret")
	if err != nil {
		return err
	}
	defer pair.Stop()
	f, alone, dir := pair.Fleet, pair.Alone, pair.Dir
	where := []string{"-nats", f.NATSURLs(), "-fleet", "bench"}
	secret := filepath.Join(dir, "secret")
	fleetToken, err := adminToken(c.reso, dir, where...)
	if err != nil {
		return err
	}
	aloneToken, err := adminToken(c.reso, dir, "-secret-file", secret)
	if err != nil {
		return err
	}
	fmt.Printf("call-fleet: %d users, each with GET /login/<email>?watch=diff open; %d SEND/s for %v after %v of warm-up; %d CPUs\n",
		c.n, c.rate, c.d, c.warmup, runtime.NumCPU())
	one, err := measure(c, "one", alone.Addr, alone.Addr, aloneToken)
	if err != nil {
		return fmt.Errorf("one node: %w", err)
	}
	fmt.Printf("  one reso on SQLite:                         %s\n", one)
	three, err := measure(c, "fleet", f.Nodes[0].Addr, f.Nodes[1].Addr, fleetToken)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	fmt.Printf("  fleet of 3 (GETs on node A, SENDs on B):    %s\n", three)
	fmt.Printf("  ratio fleet / one node: p50 %.2f, p99 %.2f\n",
		float64(three.lat.Quantile(0.50))/float64(one.lat.Quantile(0.50)),
		float64(three.lat.Quantile(0.99))/float64(one.lat.Quantile(0.99)))
	return nil
}

// result is one side's figures.
type result struct {
	lat                    latency.Hist
	sent, ok, wait, failed int64
	delivered              int64
}

func (r *result) String() string {
	return fmt.Sprintf("SEND to delivery p50 %s  p99 %s  max %s (%d samples); sent %d, 200 OK %d, 202 %d, failed %d, delivered %d",
		ms(r.lat.Quantile(0.50)), ms(r.lat.Quantile(0.99)), ms(r.lat.Max()), r.lat.Count(), r.sent, r.ok, r.wait, r.failed, r.delivered)
}

// ms prints a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

// measure logs the users in on recvAddr, opens their GETs kept open
// there, and SENDs to them on sendAddr at the rate for warmup and d.
func measure(c config, prefix, recvAddr, sendAddr, token string) (*result, error) {
	clock := time.Now()
	cookie := "user_id=0; token=" + token
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConnsPerHost: maxInFlight,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	streams := &http.Client{Transport: tr}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	var res result
	var measuring atomic.Bool
	var mu sync.Mutex // res.lat
	var readers sync.WaitGroup
	emails := make([]string, c.n)
	for i := range emails {
		emails[i] = fmt.Sprintf("%s%d@bench.example", prefix, i)
		e := emails[i]
		if err := do(hc, "POST", "http://"+recvAddr+"/login/"+e, `{"contact":"sip:`+e+`","expires":3600}`, cookie, "201 Created"); err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+recvAddr+"/login/"+e+"?watch=diff", nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Cookie", cookie)
		resp, err := streams.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.Status != "200 OK" {
			resp.Body.Close()
			return nil, fmt.Errorf("GET /login/%s?watch=diff: %s", e, resp.Status)
		}
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil { // the state
			resp.Body.Close()
			return nil, err
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			defer resp.Body.Close()
			var n struct {
				Notify string `json:"notify"`
				Data   struct {
					T int64 `json:"t"`
				} `json:"data"`
			}
			for {
				line, err := br.ReadBytes('\n')
				if err != nil {
					return
				}
				now := time.Since(clock)
				n.Notify, n.Data.T = "", 0
				if json.Unmarshal(line, &n) != nil || n.Notify != "NOTIFY" || n.Data.T == 0 {
					continue
				}
				atomic.AddInt64(&res.delivered, 1)
				if measuring.Load() {
					mu.Lock()
					res.lat.Add(now - time.Duration(n.Data.T))
					mu.Unlock()
				}
			}
		}()
	}

	// SENDs at the rate, each in a goroutine of its own, at most
	// maxInFlight at once (past it the tick is skipped and counted failed).
	var senders sync.WaitGroup
	slots := make(chan struct{}, maxInFlight)
	rng := rand.New(rand.NewPCG(1, uint64(clock.UnixNano())))
	tick := time.NewTicker(time.Second / time.Duration(c.rate))
	defer tick.Stop()
	var firstFail atomic.Value
	fail := func(s string) {
		atomic.AddInt64(&res.failed, 1)
		firstFail.CompareAndSwap(nil, s)
	}
	warmEnd := time.Now().Add(c.warmup)
	end := warmEnd.Add(c.d)
	for k := 0; ; k++ {
		now := <-tick.C
		if now.After(end) {
			break
		}
		measuring.Store(now.After(warmEnd))
		select {
		case slots <- struct{}{}:
		default:
			fail("too many SENDs in flight")
			continue
		}
		target := emails[rng.IntN(len(emails))]
		senders.Add(1)
		go func() {
			defer senders.Done()
			defer func() { <-slots }()
			body := fmt.Sprintf(`{"command":"invite","url":"/call/bench","id":"s%d","t":%d}`, k, time.Since(clock).Nanoseconds())
			atomic.AddInt64(&res.sent, 1)
			req, err := http.NewRequest("SEND", "http://"+sendAddr+"/login/"+target, strings.NewReader(body))
			if err != nil {
				fail(err.Error())
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Cookie", cookie)
			resp, err := hc.Do(req)
			if err != nil {
				fail(err.Error())
				return
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			switch resp.Status {
			case "200 OK":
				atomic.AddInt64(&res.ok, 1)
			case "202 Accepted":
				atomic.AddInt64(&res.wait, 1)
			default:
				fail(resp.Status + " " + string(bytes.TrimSpace(b)))
			}
		}()
	}
	measuring.Store(false)
	senders.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for atomic.LoadInt64(&res.delivered) < atomic.LoadInt64(&res.ok)+atomic.LoadInt64(&res.wait) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	readers.Wait()
	if res.failed > 0 || res.delivered < res.ok {
		return &res, fmt.Errorf("not clean: %d failed SENDs (first: %v), %d delivered of %d answered 200 OK", res.failed, firstFail.Load(), res.delivered, res.ok)
	}
	return &res, nil
}

// do sends one request with the cookie and checks its status.
func do(hc *http.Client, method, url, body, cookie, want string) error {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", cookie)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.Status != want {
		return fmt.Errorf("%s %s: %s %s, want %s", method, url, resp.Status, bytes.TrimSpace(b), want)
	}
	return nil
}

// adminToken runs reso admin-token with args.
func adminToken(bin, dir string, args ...string) (string, error) {
	cmd := exec.Command(bin, append([]string{"admin-token"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("reso admin-token %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

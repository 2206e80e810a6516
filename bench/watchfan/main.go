// Command watchfan measures the fan-out of GETs kept open of the channel's
// HTTP door: W watchers (Server-Sent Events, each on its own connection)
// of one resource, and publishers that PUT changes to it, P at a time,
// N in all; each change is a notification to every watcher. The sides are
// measured in alternating rounds within one run, each round on a fresh
// resource, and each side's median is printed with its ratio to the first
// side's (the baseline): deliveries per second (from the first PUT to the
// last notification read) and the server's CPU time per delivery (the
// process named and its descendants, the plugin processes of
// reso -isolate). Every run is bounded: W connections, N changes, and a
// deadline per round.
//
//	watchfan [-w 200] [-n 200] [-p 4] [-rounds 3] [-timeout 60s] NAME=http://ADDR@PID...
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reso-project/reso/bench/internal/proc"
)

// side is a server to measure.
type side struct {
	name, base string
	pid        int
	rates, cpu []float64 // per round: deliveries/s, server µs per delivery
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "watchfan:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("watchfan", flag.ContinueOnError)
	watchers := fs.Int("w", 200, "watchers (connections) of the resource")
	changes := fs.Int("n", 200, "changes (PUTs) per round")
	pubs := fs.Int("p", 4, "PUTs in flight")
	rounds := fs.Int("rounds", 3, "rounds per side")
	timeout := fs.Duration("timeout", 60*time.Second, "bound of one round")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *watchers < 1 || *changes < 1 || *pubs < 1 || *rounds < 1 {
		return errors.New("-w, -n, -p and -rounds must be positive")
	}
	var sides []*side
	for _, a := range fs.Args() {
		name, rest, ok := strings.Cut(a, "=")
		base, pidText, ok2 := strings.Cut(rest, "@")
		pid, err := strconv.Atoi(pidText)
		if !ok || !ok2 || err != nil || !strings.HasPrefix(base, "http://") {
			return fmt.Errorf("bad side %q: want NAME=http://ADDR@PID", a)
		}
		sides = append(sides, &side{name: name, base: base, pid: pid})
	}
	if len(sides) == 0 {
		return errors.New("no side to measure")
	}
	fmt.Printf("%d watchers, %d changes a round (%d in flight), %d rounds\n", *watchers, *changes, *pubs, *rounds)
	for r := range *rounds {
		for i := range sides {
			s := sides[(i+r)%len(sides)] // the side that goes first alternates
			resource := fmt.Sprintf("/bench-watch/%s-%d-%d", s.name, os.Getpid(), r)
			rate, cpu, err := round(s, resource, *watchers, *changes, *pubs, *timeout)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", s.name, r+1, err)
			}
			s.rates, s.cpu = append(s.rates, rate), append(s.cpu, cpu)
		}
	}
	base := sides[0]
	for _, s := range sides {
		rate, cpu := median(s.rates), median(s.cpu)
		fmt.Printf("%-12s %10.0f deliveries/s  %7.2f µs server CPU/delivery", s.name, rate, cpu)
		if s != base {
			fmt.Printf("  ÷ %s: %.2f deliveries, %.2f CPU", base.name, rate/median(base.rates), cpu/median(base.cpu))
		}
		fmt.Println()
	}
	return nil
}

// round opens the watchers of resource on s, PUTs the changes, and
// returns the deliveries per second and the server's CPU µs per delivery.
func round(s *side, resource string, watchers, changes, pubs int, timeout time.Duration) (float64, float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: pubs, DisableCompression: true}}
	defer client.CloseIdleConnections()
	url := s.base + "/channel" + resource
	if err := put(ctx, client, url, 0); err != nil {
		return 0, 0, err
	}
	want := int64(watchers) * int64(changes)
	var delivered atomic.Int64
	var last atomic.Int64 // unix ns of the last delivery
	done := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	started := make(chan error, watchers)
	for range watchers {
		wg.Go(func() {
			err := watch(ctx, client, url, changes, started, func() {
				last.Store(time.Now().UnixNano())
				if delivered.Add(1) == want {
					once.Do(func() { close(done) })
				}
			})
			if err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "watcher:", err)
			}
		})
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	for range watchers {
		if err := <-started; err != nil {
			return 0, 0, err
		}
	}
	u0, s0 := proc.TreeCPUSplit(s.pid)
	t0 := time.Now()
	next := make(chan int, changes)
	for i := 1; i <= changes; i++ {
		next <- i
	}
	close(next)
	errs := make(chan error, pubs)
	for range pubs {
		go func() {
			for i := range next {
				if err := put(ctx, client, url, i); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range pubs {
		if err := <-errs; err != nil {
			return 0, 0, err
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
		return 0, 0, fmt.Errorf("%d of %d deliveries before the deadline", delivered.Load(), want)
	}
	elapsed := time.Duration(last.Load() - t0.UnixNano())
	u1, s1 := proc.TreeCPUSplit(s.pid)
	cpu := (u1 - u0) + (s1 - s0)
	return float64(want) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(want), nil
}

// put changes the resource to {"n":n}.
func put(ctx context.Context, c *http.Client, url string, n int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, strings.NewReader(`{"n":`+strconv.Itoa(n)+`}`))
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PUT %s: %s", url, resp.Status)
	}
	return nil
}

// watch opens a GET kept open of url, reports on started once the state
// came, then calls delivered for each notification, until changes came.
func watch(ctx context.Context, c *http.Client, url string, changes int, started chan<- error, delivered func()) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"?watch", nil)
	if err != nil {
		started <- err
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		started <- err
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("GET kept open: %s", resp.Status)
		started <- err
		return err
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	state := false
	for n := 0; n < changes; {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if !state {
				started <- err
			}
			return err
		}
		if !strings.HasPrefix(string(line), "data: ") {
			continue
		}
		if !state {
			state = true
			started <- nil
			continue
		}
		n++
		delivered()
	}
	return nil
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

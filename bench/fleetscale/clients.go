package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// clientProc is a load client's process, seen from the bench.
type clientProc struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	reports chan clientReport // every line but progress
	done    chan struct{}     // closed once its stdout ended

	mu       sync.Mutex
	progress clientReport // the last progress line
}

// clientStop bounds the end of a load client once told to close.
const clientStop = 2 * time.Minute

// startClients starts one load client per share of shares (this program
// again, as a load client: clientEnv), each with cfg and its share.
func startClients(cfg clientConfig, shares [][]target) ([]*clientProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var out []*clientProc
	for k, share := range shares {
		c := cfg
		c.Targets = share
		c.Presence = cfg.Presence + "p" + strconv.Itoa(k) + "-" // names of its own
		line, err := json.Marshal(c)
		if err != nil {
			return out, err
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), clientEnv+"=1")
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = childAttr()
		in, err := cmd.StdinPipe()
		if err != nil {
			return out, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return out, err
		}
		if err := cmd.Start(); err != nil {
			return out, err
		}
		p := &clientProc{cmd: cmd, in: in, reports: make(chan clientReport, 64), done: make(chan struct{})}
		out = append(out, p)
		go p.readReports(stdout)
		if _, err := in.Write(append(line, '\n')); err != nil {
			return out, fmt.Errorf("load client: %w", err)
		}
	}
	return out, nil
}

// readReports passes the client's report lines on until its stdout ends.
func (p *clientProc) readReports(stdout io.Reader) {
	defer close(p.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r clientReport
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		if r.Kind == "progress" {
			p.mu.Lock()
			p.progress = r
			p.mu.Unlock()
			continue
		}
		p.reports <- r
	}
	close(p.reports)
}

// Progress is the client's last progress line.
func (p *clientProc) Progress() clientReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.progress
}

// Pid is the client's process id.
func (p *clientProc) Pid() int { return p.cmd.Process.Pid }

// await returns the client's next report, which must be of kind, waiting
// at most until deadline.
func (p *clientProc) await(kind string, deadline time.Time) (clientReport, error) {
	select {
	case r, ok := <-p.reports:
		if !ok {
			return r, fmt.Errorf("load client %d ended (%v)", p.Pid(), p.cmd.ProcessState)
		}
		if r.Kind != kind {
			return r, fmt.Errorf("load client %d: a %q report where %q was awaited", p.Pid(), r.Kind, kind)
		}
		return r, nil
	case <-time.After(time.Until(deadline)):
		return clientReport{}, fmt.Errorf("load client %d: no %q report by the deadline", p.Pid(), kind)
	}
}

// send writes a command line to the client.
func (p *clientProc) send(cmd string) error {
	_, err := io.WriteString(p.in, cmd+"\n")
	return err
}

// stop tells the client to close its connections and waits (at most
// clientStop) until it exited; past that it is killed. It returns the
// connections that dropped before the close and why the first did,
// from its last report.
func (p *clientProc) stop() (dropped int64, why []string, err error) {
	p.in.Close()
	exited := make(chan error, 1)
	go func() {
		for r := range p.reports {
			if r.Kind == "closed" {
				dropped, why = r.Dropped, r.Drops
			}
		}
		<-p.done
		exited <- p.cmd.Wait()
	}()
	select {
	case err := <-exited:
		return dropped, why, err
	case <-time.After(clientStop):
		p.cmd.Process.Kill()
		<-exited
		return dropped, why, errors.New("a load client did not end within " + clientStop.String())
	}
}

// stopClients stops every client (at once) and returns the connections
// that dropped before the close, summed, why the first of each client
// did, and the first error.
func stopClients(ps []*clientProc) (int64, []string, error) {
	errs := make([]error, len(ps))
	drops := make([]int64, len(ps))
	whys := make([][]string, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { drops[i], whys[i], errs[i] = p.stop() })
	}
	wg.Wait()
	var dropped int64
	var why []string
	for i, d := range drops {
		dropped += d
		why = append(why, whys[i]...)
	}
	return dropped, why, errors.Join(errs...)
}

// split shares the connections of targets among the fewest processes of
// at most perProc connections each, every process taking its part of
// every node's (so that each node is reached from every process).
func split(targets []target, perProc int) [][]target {
	total := 0
	for _, t := range targets {
		total += t.N
	}
	// Each process's part of a node may be one above its even share.
	room := max(perProc-len(targets), 1)
	k := max((total+room-1)/room, 1)
	shares := make([][]target, k)
	for _, t := range targets {
		for p := range k {
			n := t.N*(p+1)/k - t.N*p/k
			if n > 0 {
				shares[p] = append(shares[p], target{Addr: t.Addr, N: n})
			}
		}
	}
	return shares
}

// Command reconnect measures how long the clients of the channel take to
// reconnect after a server restart, with their default options: reso.js
// on Node's own WebSocket, reso.js on the ws package, reso.js in headless
// Chromium, and the Go package client, each in a process of its own.
//
// For each client it starts reso (on a fixed loopback port, with its
// database in a directory of its own), starts the client, which
// subscribes to a resource and reports each change of its state, and then
// N times: kills reso with -9, waits until the client reports the drop,
// keeps reso down for -down (default 1 s: the client's attempts meanwhile
// are refused), starts reso again on the same port and database, and
// measures from the
// moment the new reso listens (its log says so, which it writes once
// it accepts connections) to the moment the client reports "open". It
// prints p50 and max for each client.
//
//	go run ./bench/reconnect -reso PATH [-n 20] [-down 1s] [-clients node,ws,chromium,go] [-chromium PATH] [-node PATH]
//
// bench/reconnect.sh builds what it needs and runs it. The Go client's
// process is this program: reconnect goclient -url URL.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest/freeport"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "goclient" {
		if err := goClient(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "reconnect goclient:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "reconnect:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	reso     string
	n        int
	down     time.Duration
	clients  []string
	chromium string
	node     string
	self     string // this program, for the Go client's process
	root     string // the repository
}

// stepTimeout bounds each wait: for the client to report a state, for
// reso to listen or exit.
const stepTimeout = 90 * time.Second

func run() error {
	var c config
	var clients string
	flag.StringVar(&c.reso, "reso", "", "the reso binary (required)")
	flag.IntVar(&c.n, "n", 20, "restarts per client")
	flag.DurationVar(&c.down, "down", time.Second, "how long reso stays down after the client noticed the drop (its attempts meanwhile are refused)")
	flag.StringVar(&clients, "clients", "node,ws,chromium,go", "the clients to measure, comma-separated: node (reso.js on Node's WebSocket), ws (reso.js on the ws package), chromium (reso.js in headless Chromium), go (the Go client)")
	flag.StringVar(&c.chromium, "chromium", "", "the Chromium binary (default: chromium, chromium-browser or google-chrome on PATH)")
	flag.StringVar(&c.node, "node", "node", "the Node binary (20 or later)")
	flag.Parse()
	if c.reso == "" || c.n < 1 || c.n > 1000 || c.down < 0 || c.down > time.Minute {
		return errors.New("want -reso PATH, -n between 1 and 1000 and -down between 0 and 1m")
	}
	c.clients = strings.Split(clients, ",")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	c.self = self
	if c.root, err = os.Getwd(); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(c.root, "client/js/reso.js")); err != nil {
		return errors.New("run it from the repository's root (bench/reconnect.sh does)")
	}
	fmt.Printf("reconnect time after a restart of reso (kill -9, down %v, same port and database), default options, %d restarts each\n", c.down, c.n)
	fmt.Printf("from the restarted reso listening to the client reporting open\n")
	fmt.Printf("%-10s %4s %10s %10s  %s\n", "client", "n", "p50_ms", "max_ms", "each_ms")
	for _, name := range c.clients {
		samples, err := measure(c, name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("%-10s %4d %10.1f %10.1f  %s\n", name, len(samples), ms(quantile(samples, 0.5)), ms(slices.Max(samples)), list(samples))
	}
	return nil
}

// measure runs the N restarts for one client and returns each reconnect
// time.
func measure(c config, name string) ([]time.Duration, error) {
	dir, err := os.MkdirTemp("", "reso-reconnect-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	www := filepath.Join(dir, "www")
	if err := os.Mkdir(www, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("<!doctype html><title>reconnect</title>\n"), 0o644); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	srv := &resoProc{bin: c.reso, dir: dir, args: []string{"-addr", addr, "-db", filepath.Join(dir, "reso.db"), "-www", www}}
	if _, err := srv.start(); err != nil {
		return nil, err
	}
	defer srv.kill()

	cl, err := startClient(c, name, addr)
	if err != nil {
		return nil, err
	}
	defer cl.close()
	if err := cl.waitFor("open"); err != nil {
		return nil, err
	}
	var out []time.Duration
	for range c.n {
		srv.kill()
		if err := cl.waitFor("reconnecting"); err != nil {
			return nil, err
		}
		time.Sleep(c.down) // the restart's length, not a wait for an event
		listening, err := srv.start()
		if err != nil {
			return nil, err
		}
		if err := cl.waitFor("open"); err != nil {
			return nil, err
		}
		out = append(out, cl.at.Sub(listening))
	}
	return out, nil
}

// resoProc is reso, started again and again on the same flags.
type resoProc struct {
	bin, dir string
	args     []string
	cmd      *exec.Cmd
	done     chan struct{}
}

var listenRe = regexp.MustCompile(`msg="reso listening"`)

// start starts reso and returns when its log said it listens.
func (r *resoProc) start() (time.Time, error) {
	cmd := exec.Command(r.bin, r.args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(r.dir, "state"))
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return time.Time{}, err
	}
	r.cmd, r.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(r.done) }()
	found := make(chan time.Time, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if listenRe.MatchString(sc.Text()) {
				select {
				case found <- time.Now():
				default:
				}
			}
			if log.Len() < 1<<16 {
				log.WriteString(sc.Text() + "\n")
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case t := <-found:
		return t, nil
	case <-r.done:
		return time.Time{}, fmt.Errorf("reso exited before listening")
	case <-time.After(stepTimeout):
		r.kill()
		return time.Time{}, fmt.Errorf("reso did not listen within %v", stepTimeout)
	}
}

// kill kills reso with SIGKILL and waits for its end.
func (r *resoProc) kill() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// clientProc is a client under measure: its reports of state, each with the
// time it was received.
type clientProc struct {
	name   string
	states chan report
	at     time.Time // when the last state waited for was reported
	stop   func()
}

type report struct {
	state string
	at    time.Time
}

// waitFor waits until the client reports state, skipping the others.
func (cl *clientProc) waitFor(state string) error {
	deadline := time.After(stepTimeout)
	for {
		select {
		case r, ok := <-cl.states:
			if !ok {
				return fmt.Errorf("the client ended while waiting for %q", state)
			}
			if r.state == state {
				cl.at = r.at
				return nil
			}
		case <-deadline:
			return fmt.Errorf("the client did not report %q within %v", state, stepTimeout)
		}
	}
}

func (cl *clientProc) close() { cl.stop() }

// startClient starts the client name on the channel at addr.
func startClient(c config, name, addr string) (*clientProc, error) {
	url := "ws://" + addr + "/channel"
	switch name {
	case "node", "ws":
		args := []string{filepath.Join(c.root, "bench/reconnect/client.mjs"), url, name}
		if name == "node" {
			// Node 20 and 21 have their WebSocket behind a flag.
			if out, err := exec.Command(c.node, "-p", "typeof WebSocket").Output(); err != nil {
				return nil, fmt.Errorf("%s: %v", c.node, err)
			} else if strings.TrimSpace(string(out)) != "function" {
				args = append([]string{"--experimental-websocket"}, args...)
			}
		}
		return startProcess(name, exec.Command(c.node, args...))
	case "go":
		return startProcess(name, exec.Command(c.self, "goclient", "-url", url))
	case "chromium":
		return startChromium(c, addr)
	}
	return nil, fmt.Errorf("unknown client %q (node, ws, chromium or go)", name)
}

// startProcess starts a client process that writes "state <state>" lines
// on its standard output.
func startProcess(name string, cmd *exec.Cmd) (*clientProc, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	cl := &clientProc{name: name, states: make(chan report, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(cl.states)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "state "); ok {
				cl.states <- report{state: s, at: time.Now()}
			}
		}
	}()
	cl.stop = func() {
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	}
	return cl, nil
}

// freePort returns a loopback port free right now.
func freePort() (int, error) {
	p, err := freeport.Take(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func list(d []time.Duration) string {
	var b strings.Builder
	for i, x := range d {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.0f", ms(x))
	}
	return b.String()
}

// withTimeout is context.WithTimeout of stepTimeout.
func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, stepTimeout)
}

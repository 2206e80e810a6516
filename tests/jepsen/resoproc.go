package jepsen

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// resoProc is one reso node of an Env: the same flags, directory and
// environment at every start, a new log file at each.
type resoProc struct {
	name string   // "node 2", for messages
	bin  string   // the reso binary
	dir  string   // its working directory; XDG_STATE_HOME is dir/state
	args []string // its flags after -addr and -admin-addr
	// onListen is told the address of each start once the node listens
	// (a fleet's node joins the fleet first), nil when none wants it.
	onListen func(addr string)

	starting sync.Mutex // one start at a time

	mu    sync.Mutex
	cmd   *exec.Cmd     // nil before the first start
	done  chan struct{} // closed once cmd exited
	addr  string        // host:port it serves on, "" until it logged it
	admin string        // host:port of its admin listener
	logs  []string      // the log file of each start
}

// Bounds of a node's start and readiness.
const (
	procAdmin  = 60 * time.Second // until it logs its admin address (a raced binary starts slowly)
	procListen = 10 * time.Minute // until it logs its address: it joins its fleet first
	procReady  = 60 * time.Second // until /readyz answers 200
)

// Messages of reso's log that give its addresses, text or JSON.
var (
	listenRe = regexp.MustCompile(`msg="reso listening" addr=(\S+)|"msg":"reso listening","addr":"([^"]+)"`)
	adminRe  = regexp.MustCompile(`msg="reso admin listening" addr=(\S+)|"msg":"reso admin listening","addr":"([^"]+)"`)
)

// newResoProc prepares a node in a new directory under parent.
func newResoProc(name, bin, parent string, args []string) (*resoProc, error) {
	dir, err := os.MkdirTemp(parent, "node-")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o700); err != nil {
		return nil, err
	}
	return &resoProc{name: name, bin: bin, dir: dir, args: args}, nil
}

// start starts the node, unless it runs, and waits until its admin
// listener is up. The node listens on its address once it joined its
// fleet (it exits after a minute when it cannot): start does not wait
// for that, onListen is told then; awaitReady waits for both.
func (n *resoProc) start() error {
	n.starting.Lock()
	defer n.starting.Unlock()
	if n.running() {
		return nil
	}
	n.mu.Lock()
	logName := filepath.Join(n.dir, fmt.Sprintf("reso.%d.log", len(n.logs)))
	n.mu.Unlock()
	out, err := os.Create(logName)
	if err != nil {
		return err
	}
	args := append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, n.args...)
	cmd := exec.Command(n.bin, args...)
	cmd.Dir = n.dir
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(n.dir, "state"))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("jepsen: %s: %w", n.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(done)
	}()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.addr, n.admin = "", ""
	n.logs = append(n.logs, logName)
	n.mu.Unlock()
	deadline := time.Now().Add(procAdmin)
	for {
		data, _ := os.ReadFile(logName)
		if a := adminRe.FindSubmatch(data); a != nil {
			n.mu.Lock()
			n.admin = string(a[1]) + string(a[2])
			n.mu.Unlock()
			go n.watchListen(logName, done)
			return nil
		}
		if closed(done) {
			return fmt.Errorf("jepsen: %s exited at its start: %s", n.name, tailOf(data))
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("jepsen: %s did not listen within %v: %s", n.name, procAdmin, tailOf(data))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// watchListen reads the log of the start that ends with done until it
// gives the node's address; it keeps it and tells onListen.
func (n *resoProc) watchListen(logName string, done chan struct{}) {
	deadline := time.Now().Add(procListen)
	for !closed(done) && time.Now().Before(deadline) {
		data, _ := os.ReadFile(logName)
		if l := listenRe.FindSubmatch(data); l != nil {
			addr := string(l[1]) + string(l[2])
			n.mu.Lock()
			current := n.done == done
			if current {
				n.addr = addr
			}
			n.mu.Unlock()
			if current && n.onListen != nil {
				n.onListen(addr)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// closed reports whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// kill kills the node with SIGKILL (also when it is paused) and waits
// until it exited; a node not running is left as it is.
func (n *resoProc) kill() error {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil || closed(done) {
		return nil
	}
	_ = cmd.Process.Kill()
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("jepsen: %s (pid %d) did not exit within 30 s of SIGKILL", n.name, cmd.Process.Pid)
	}
}

// signal sends sig to the node, which must be running.
func (n *resoProc) signal(sig syscall.Signal) error {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil || closed(done) {
		return fmt.Errorf("jepsen: %s is not running", n.name)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("jepsen: %s: %w", n.name, err)
	}
	return nil
}

// pause stops the node with SIGSTOP and returns once it is stopped (on
// Linux; elsewhere once the signal is sent).
func (n *resoProc) pause() error {
	if err := n.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	return n.awaitState(true)
}

// resume lets the node go on after pause (SIGCONT) and returns once it
// runs (on Linux).
func (n *resoProc) resume() error {
	if err := n.signal(syscall.SIGCONT); err != nil {
		return err
	}
	return n.awaitState(false)
}

// signalWait bounds the wait for a signal's effect.
const signalWait = 10 * time.Second

// awaitState waits until the node's process is stopped (or not), as far
// as this system tells.
func (n *resoProc) awaitState(stopped bool) error {
	pid := n.pid()
	deadline := time.Now().Add(signalWait)
	for natstest.CanSeeState && pid != 0 {
		st := natstest.ProcState(pid)
		if st == "" || (st == "T") == stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jepsen: %s (pid %d) in state %s %v after the signal", n.name, pid, st, signalWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// running reports whether the node's process lives (paused or not).
func (n *resoProc) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil && !closed(n.done)
}

// pid returns the node's process id, 0 when it is not running.
func (n *resoProc) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || closed(n.done) {
		return 0
	}
	return n.cmd.Process.Pid
}

// addrs returns the addresses of the node's last start.
func (n *resoProc) addrs() (addr, admin string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addr, n.admin
}

// readyClient asks for /readyz; a node that does not answer within its
// timeout is not ready.
var readyClient = &http.Client{Timeout: 5 * time.Second}

// readyz returns the status code of the node's /readyz (on its admin
// listener) and the answer's first lines; 0 when there was no answer.
func (n *resoProc) readyz() (int, string) {
	_, admin := n.addrs()
	resp, err := readyClient.Get("http://" + admin + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// awaitReady waits until the node answers /readyz with 200, at most
// within.
func (n *resoProc) awaitReady(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if !n.running() {
			return fmt.Errorf("jepsen: %s is not running: %s", n.name, n.logTail())
		}
		code, body := n.readyz()
		if addr, _ := n.addrs(); code == http.StatusOK && addr != "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jepsen: %s not ready within %v: /readyz %d %q", n.name, within, code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logTail returns the end of the log of the node's last start.
func (n *resoProc) logTail() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.logs) == 0 {
		return "(never started)"
	}
	data, err := os.ReadFile(n.logs[len(n.logs)-1])
	if err != nil {
		return err.Error()
	}
	return tailOf(data)
}

// raceMark is what the race detector writes when it finds a race.
const raceMark = "WARNING: DATA RACE"

// races returns the log files of the node (of every start) that report a
// data race.
func (n *resoProc) races() []string {
	n.mu.Lock()
	logs := append([]string(nil), n.logs...)
	n.mu.Unlock()
	var out []string
	for _, name := range logs {
		if data, err := os.ReadFile(name); err == nil && bytes.Contains(data, []byte(raceMark)) {
			out = append(out, name)
		}
	}
	return out
}

// tailOf returns the end of a log.
func tailOf(data []byte) string {
	if len(data) > 3000 {
		data = data[len(data)-3000:]
	}
	return string(bytes.TrimSpace(data))
}

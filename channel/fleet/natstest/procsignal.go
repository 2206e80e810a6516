package natstest

import (
	"fmt"
	"strconv"
	"syscall"
	"time"
)

// The signals a test sends to the servers of a [Procs] cluster: kill,
// pause and resume, stop.

// Kill kills server i with SIGKILL and waits until it exited.
func (p *Procs) Kill(i int) { p.end(i, syscall.SIGKILL) }

// Pause stops server i with SIGSTOP: it keeps its connections and
// answers nothing until [Procs.Resume]. It returns once the process is
// stopped (on Linux; elsewhere once the signal is sent). It is an error
// when the server is not running.
func (p *Procs) Pause(i int) error {
	if err := p.signal(i, syscall.SIGSTOP); err != nil {
		return err
	}
	return p.awaitState(i, true)
}

// Resume lets server i go on after [Procs.Pause] (SIGCONT), and returns
// once its process runs (on Linux).
func (p *Procs) Resume(i int) error {
	if err := p.signal(i, syscall.SIGCONT); err != nil {
		return err
	}
	return p.awaitState(i, false)
}

// signalWait bounds the wait for a signal's effect.
const signalWait = 10 * time.Second

// awaitState waits until server i's process is stopped (or not), as
// far as this system tells.
func (p *Procs) awaitState(i int, stopped bool) error {
	pid := p.Pid(i)
	deadline := time.Now().Add(signalWait)
	for CanSeeState && pid != 0 {
		st := ProcState(pid)
		if st == "" || (st == "T") == stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("natstest: server %d (pid %d) in state %s %v after the signal", i, pid, st, signalWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// signal sends sig to server i, which must be running.
func (p *Procs) signal(i int, sig syscall.Signal) error {
	p.mu.Lock()
	pr := p.procs[i]
	p.mu.Unlock()
	if pr == nil {
		return fmt.Errorf("natstest: server %d is not running", i)
	}
	if err := pr.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("natstest: server %d: %w", i, err)
	}
	return nil
}

// Pid returns the process id of server i, 0 while it is stopped.
func (p *Procs) Pid(i int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.procs[i] == nil {
		return 0
	}
	return p.procs[i].cmd.Process.Pid
}

// Name returns the server_name of server i: "nats-<i>", as JetStream
// names the leaders and replicas of streams.
func (p *Procs) Name(i int) string { return "nats-" + strconv.Itoa(i) }

// MonitorURL returns the base URL of server i's monitoring endpoints
// ("http://127.0.0.1:PORT"; with [ProcsConfig.Monitor], "" without).
func (p *Procs) MonitorURL(i int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cfg.Monitor || p.mport[i] <= 0 {
		return ""
	}
	return "http://127.0.0.1:" + strconv.Itoa(p.mport[i])
}

// Stop stops server i with SIGTERM (a clean shutdown) and waits until it
// exited, killing it after 30 s.
func (p *Procs) Stop(i int) { p.end(i, syscall.SIGTERM) }

// StopAll stops every server.
func (p *Procs) StopAll() {
	for i := range p.procs {
		p.Stop(i)
	}
}

// killAll kills every server and closes the proxies of the routes.
func (p *Procs) killAll() {
	for i := range p.procs {
		p.Kill(i)
	}
	for _, row := range p.routes {
		for _, r := range row {
			if r != nil {
				r.Close()
			}
		}
	}
}

// end sends sig to server i and waits until it exited.
func (p *Procs) end(i int, sig syscall.Signal) {
	p.mu.Lock()
	pr := p.procs[i]
	p.procs[i] = nil
	p.mu.Unlock()
	if pr == nil {
		return
	}
	_ = pr.cmd.Process.Signal(sig)
	// A paused server handles no signal but SIGKILL until it goes on.
	_ = pr.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-pr.done:
	case <-time.After(30 * time.Second):
		_ = pr.cmd.Process.Kill()
		<-pr.done
	}
}

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// startTimeout bounds the wait for the peer to listen.
const startTimeout = 10 * time.Second

// child is the peer process.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// startPeer starts this executable as "rpcfloor peer -socket socket" and
// waits until it says it listens. It fails if the peer exits first or
// does not say so within startTimeout.
func startPeer(socket string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "peer", "-socket", socket)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = childAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start peer: %w", err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("unexpected %q", line)
		}
		ready <- err
		cmd.Wait() // after the read: Wait closes the pipe
		close(c.done)
	}()
	select {
	case err := <-ready:
		if err != nil {
			c.stop()
			return nil, fmt.Errorf("peer did not start: %w", err)
		}
		return c, nil
	case <-time.After(startTimeout):
		c.stop()
		return nil, errors.New("peer did not start within " + startTimeout.String())
	}
}

// stop kills the peer and waits for it to exit.
func (c *child) stop() {
	c.cmd.Process.Kill()
	<-c.done
}

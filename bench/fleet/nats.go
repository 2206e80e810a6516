package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// serveNATS runs a three-server JetStream cluster (the real nats-server,
// in this process) with its stores under dir, prints its client URLs on
// a line of stdout and stops it when stdin ends: the child that keeps
// NATS apart from the load client, so that its CPU time is its own.
func serveNATS(dir string) error {
	c, err := natstest.New(3, dir)
	if err != nil {
		return err
	}
	defer c.StopAll()
	fmt.Println(c.URLs())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// natsChild is the NATS cluster's process.
type natsChild struct {
	cmd   *exec.Cmd
	stdin io.Closer
	urls  string
}

// startNATS starts this program as the NATS cluster's process.
func startNATS(dir string) (*natsChild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve-nats", dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		in.Close()
		cmd.Wait()
		return nil, fmt.Errorf("the NATS cluster did not start: %w", err)
	}
	return &natsChild{cmd: cmd, stdin: in, urls: strings.TrimSpace(line)}, nil
}

// stop ends the cluster's process.
func (n *natsChild) stop() {
	n.stdin.Close()
	n.cmd.Wait()
}

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// node is a reso process.
type node struct {
	cmd  *exec.Cmd
	addr string
}

var listenRe = regexp.MustCompile(`msg="reso listening" addr=(\S+)`)

// startNode starts reso with args and waits until it listens.
func startNode(bin, dir, name string, args ...string) (*node, error) {
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-login", "", "-channel-max-connections", "20000"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, name))
	out, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-found:
		return &node{cmd: cmd, addr: a}, nil
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		return nil, fmt.Errorf("%s did not listen", name)
	}
}

// stop ends the node with SIGTERM (kill once it is past its grace).
func (n *node) stop() { stopProcess(n.cmd) }

// stopProcess ends cmd with SIGTERM, and kills it once past its grace.
func stopProcess(cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// numCPU returns the CPUs this process may use.
func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

package tests

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// childLeftReady is the line TestNoChildLeftHelper prints once its
// children run.
const childLeftReady = "children started"

// TestNoChildLeft kills a test binary mid-run with SIGKILL, as go test's
// -timeout or a killed CI job would, and checks that none of its
// children is left: a reso with every plugin isolated (and so its plugin
// processes) and a nats-server, started as the black-box tests start
// them (see command).
func TestNoChildLeft(t *testing.T) {
	t.Parallel()
	cmd := command(os.Args[0], "-test.run=^TestNoChildLeftHelper$", "-test.v", "-test.timeout=10m")
	// The binary's own temporary directories under one of this test.
	cmd.Env = append(os.Environ(), childLeftEnv+"="+binary, "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			log.Write([]byte(sc.Text() + "\n"))
			if sc.Text() == childLeftReady {
				lines <- sc.Text()
			}
		}
		close(lines)
	}()
	select {
	case _, ok := <-lines:
		if !ok {
			t.Fatalf("the test binary ended before its children started:\n%s", log.String())
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("the test binary did not start its children within 5 minutes:\n%s", log.String())
	}
	kids := descendants(t, cmd.Process.Pid)
	var reso, nats int
	for _, p := range kids {
		switch name := commandName(p); {
		case strings.HasSuffix(name, "/reso") || name == "reso":
			reso++
		case strings.Contains(name, "nats-server"):
			nats++
		}
	}
	// reso, and its plugins (also the reso binary, or /proc/self/exe).
	if reso < 1 || nats < 1 || len(kids) < 3 {
		t.Fatalf("the test binary runs %d processes (%d reso, %d nats-server), want a reso with its plugins and a nats-server:\n%s", len(kids), reso, nats, log.String())
	}
	cmd.Process.Kill()
	cmd.Wait()
	killed = true
	waitGone(t, kids, wait)
}

// TestNoChildLeftHelper is the test binary that TestNoChildLeft kills:
// it starts its children, says so, and waits to be killed.
func TestNoChildLeftHelper(t *testing.T) {
	t.Parallel()
	if os.Getenv(childLeftEnv) == "" {
		t.Skip("run by TestNoChildLeft")
	}
	natstest.StartProcs(t, 1)
	start(t, mode{name: "isolated", args: []string{"-isolate", "all"}})
	fmt.Println(childLeftReady)
	time.Sleep(5 * time.Minute)
	t.Fatal("not killed within 5 minutes")
}

// descendants returns the live processes under pid, children first.
func descendants(t *testing.T, pid int) []int {
	t.Helper()
	var out []int
	for next := []int{pid}; len(next) > 0; {
		var kids []int
		for _, p := range next {
			kids = append(kids, children(t, p)...)
		}
		out = append(out, kids...)
		next = kids
	}
	return out
}

// commandName returns the program of pid's command line, "" when it is
// gone.
func commandName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	name, _, _ := strings.Cut(string(b), "\x00")
	return name
}

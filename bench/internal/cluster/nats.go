package cluster

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// natsDirEnv, in the environment of a program's process, makes it the
// NATS cluster's process of StartFleet: its value is the stores' directory.
const natsDirEnv = "RESO_BENCH_NATS_DIR"

// natsSyncEnv, beside natsDirEnv, is the cluster's sync_interval:
// "always" (or unset) or "default" (natstest.Sync).
const natsSyncEnv = "RESO_BENCH_NATS_SYNC"

// NATSChild tells whether this process was started by StartFleet as the
// NATS cluster's process, and with which directory. A program that calls
// StartFleet checks it first thing in main and then only calls ServeNATS.
func NATSChild() (dir string, ok bool) {
	dir = os.Getenv(natsDirEnv)
	return dir, dir != ""
}

// Main is the main function of a program that calls StartFleet: in the
// NATS cluster's process (NATSChild) it serves NATS, elsewhere it calls
// run; an error of either is printed after prog and exits with status 1.
func Main(prog string, run func() error) {
	var err error
	if dir, ok := NATSChild(); ok {
		sync := natstest.SyncAlways
		if os.Getenv(natsSyncEnv) == "default" {
			sync = natstest.SyncDefault
		}
		err = ServeNATS(dir, sync)
	} else {
		err = run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, prog+":", err)
		os.Exit(1)
	}
}

// ServeNATS runs a three-server JetStream cluster (the real nats-server,
// in this process) with its stores under dir and sync_interval sync,
// prints its client URLs on a line of stdout and stops it when stdin ends.
func ServeNATS(dir string, sync natstest.Sync) error {
	c, err := natstest.NewSync(3, dir, sync)
	if err != nil {
		return err
	}
	defer c.StopAll()
	fmt.Println(c.URLs())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// natsProc is the NATS cluster's process.
type natsProc struct {
	cmd   *exec.Cmd
	stdin io.Closer
	urls  string
}

// startNATS starts this program again as the NATS cluster's process, so
// that NATS's CPU time and memory are apart from the load client's.
func startNATS(dir string, sync natstest.Sync) (*natsProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	syncEnv := "always"
	if sync == natstest.SyncDefault {
		syncEnv = "default"
	}
	cmd.Env = append(os.Environ(), natsDirEnv+"="+dir, natsSyncEnv+"="+syncEnv)
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
	return &natsProc{cmd: cmd, stdin: in, urls: strings.TrimSpace(line)}, nil
}

// stop ends the cluster's process.
func (n *natsProc) stop() {
	n.stdin.Close()
	n.cmd.Wait()
}

package jepsen

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// devEnv is a throwaway Env until fleet.go lands: three reso nodes on a
// three-server NATS cluster of processes, no faults.
type devEnv struct {
	urls []string
}

var (
	devBinOnce sync.Once
	devBin     string
	devBinErr  error
)

// devListenRe finds the listening address in a reso log.
var devListenRe = regexp.MustCompile(`msg="reso listening" addr=(\S+)|"msg":"reso listening","addr":"([^"]+)"`)

// devStart starts a three-node fleet for tb.
func devStart(tb testing.TB) *devEnv {
	tb.Helper()
	devBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "reso-jepsen-bin-")
		if err != nil {
			devBinErr = err
			return
		}
		devBin = filepath.Join(dir, "reso")
		out, err := exec.Command("go", "build", "-o", devBin, "../../cmd/reso").CombinedOutput()
		if err != nil {
			devBinErr = fmt.Errorf("building reso: %v\n%s", err, out)
		}
	})
	if devBinErr != nil {
		tb.Fatal(devBinErr)
	}
	nc := natstest.StartProcs(tb, 3)
	dir := tb.TempDir()
	e := &devEnv{}
	for i := range 3 {
		log, err := os.Create(filepath.Join(dir, fmt.Sprintf("node-%d.log", i)))
		if err != nil {
			tb.Fatal(err)
		}
		cmd := exec.Command(devBin, "-addr", "127.0.0.1:0", "-db", ":memory:", "-nats", nc.URLs(), "-fleet", "jepsen", "-fleet-heartbeat", "4s")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); log.Close() })
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, _ := os.ReadFile(log.Name())
			if m := devListenRe.FindStringSubmatch(string(b)); m != nil {
				e.urls = append(e.urls, "http://"+m[1]+m[2])
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("node %d did not listen:\n%s", i, b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := e.Heal(); err != nil {
		tb.Fatal(err)
	}
	return e
}

func (e *devEnv) Nodes() int             { return len(e.urls) }
func (e *devEnv) URL(i int) string       { return e.urls[i] }
func (e *devEnv) Faults(...Kind) []Fault { return nil }
func (e *devEnv) String() string         { return strings.Join(e.urls, " ") }
func (e *devEnv) Heal() error {
	for i, u := range e.urls {
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := http.Get(u + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %d not ready", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

var _ Env = (*devEnv)(nil)

func TestDevSmoke(t *testing.T) {
	env := devStart(t)
	res := Run(env, RunConfig{NoFaults: true, Duration: 10 * time.Second, Dir: OutputDir(t), Verbose: true, Logf: t.Logf})
	t.Logf("%+v", res)
}

func TestDevSabotage(t *testing.T) {
	env := devStart(t)
	res := Run(env, RunConfig{NoFaults: true, Sabotage: true, Duration: 8 * time.Second, Dir: OutputDir(t), Logf: t.Logf})
	t.Logf("%+v", res)
	for _, v := range res.Violations {
		t.Log(v)
	}
}

package jepsen

import (
	"errors"
	"sync"
	"testing"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// SingleConfig says what StartSingle starts.
type SingleConfig struct {
	// Args are more flags of the node.
	Args []string
}

// Single is an Env of one reso node on SQLite (its default -db, in its
// state directory), reached through a gate as a Fleet's nodes are. Its
// one fault is KillSingle.
type Single struct {
	node *resoProc
	gate *natstest.Proxy

	mu     sync.Mutex
	faults []*envFault
}

// StartSingle starts one node as cfg says, waits until it is ready and
// kills it when tb ends (and when the test binary dies). When tb ends, a
// data race the node reported (under -race) fails it, and when tb
// failed, the end of its log is logged.
func StartSingle(tb testing.TB, cfg SingleConfig) *Single {
	tb.Helper()
	bin := BuildReso(tb)
	gate, err := natstest.NewProxy("")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { gate.Close() })
	n, err := newResoProc("node 0", bin, tb.TempDir(), cfg.Args)
	if err != nil {
		tb.Fatal(err)
	}
	n.onListen = gate.SetTarget
	tb.Cleanup(func() { endNodes(tb, []*resoProc{n}) })
	s := &Single{node: n, gate: gate}
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
	return s
}

// start starts the node (again) and waits until it is ready (the gate
// passes connections to it once it listens).
func (s *Single) start() error {
	if err := s.node.start(); err != nil {
		return err
	}
	return s.node.awaitReady(procReady)
}

// Nodes returns 1.
func (s *Single) Nodes() int { return 1 }

// URL returns the node's base URL, its gate's; i must be 0.
func (s *Single) URL(i int) string { return "http://" + s.gate.Addr() }

// Faults returns a KillSingle fault when it is asked or nothing is.
func (s *Single) Faults(kinds ...Kind) []Fault {
	var out []Fault
	for _, k := range kinds {
		if k == KillSingle {
			out = append(out, s.newKill())
		}
	}
	if len(kinds) == 0 {
		out = append(out, s.newKill())
	}
	return out
}

// newKill returns a KillSingle fault: SIGKILL of the node; its heal
// starts it again on the same database and waits until it is ready.
func (s *Single) newKill() *envFault {
	x := &envFault{kind: KillSingle, hit: func() (string, func() error, error) {
		s.gate.SetTarget("")
		return "node 0", s.start, s.node.kill()
	}}
	s.mu.Lock()
	s.faults = append(s.faults, x)
	s.mu.Unlock()
	return x
}

// Heal heals the faults in force, starts the node if it is not running
// and waits until it is ready.
func (s *Single) Heal() error {
	s.mu.Lock()
	faults := append([]*envFault(nil), s.faults...)
	s.mu.Unlock()
	var errs []error
	for _, x := range faults {
		if err := x.Heal(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.start(); err != nil {
		errs = append(errs, err)
	}
	for _, x := range faults {
		x.forget()
	}
	return errors.Join(errs...)
}

var _ Env = (*Single)(nil)

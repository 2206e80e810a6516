package jepsen

import (
	"fmt"
	"sync"
)

// envFault is a Fault of a Fleet or a Single: Inject picks a target (of
// a fleet: one under no other fault) and hits it; Heal undoes it and
// waits until the target serves again (a node ready, the log stream's
// replicas current).
type envFault struct {
	kind Kind
	hit  func() (target string, undo func() error, err error)

	mu     sync.Mutex
	target string
	undo   func() error // ends the fault in force; nil when none is
}

// Kind returns the fault's kind.
func (x *envFault) Kind() Kind { return x.kind }

// Target names what the last Inject hit.
func (x *envFault) Target() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.target
}

// Inject starts the fault; it is an error when it is in force already.
func (x *envFault) Inject() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.undo != nil {
		return fmt.Errorf("jepsen: %s is in force on %s already", x.kind, x.target)
	}
	target, undo, err := x.hit()
	x.target, x.undo = target, undo
	if err != nil {
		return fmt.Errorf("jepsen: %s on %q: %w", x.kind, target, err)
	}
	return nil
}

// Heal ends the fault, if it is in force; when that fails, a later Heal
// tries again.
func (x *envFault) Heal() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.undo == nil {
		return nil
	}
	if err := x.undo(); err != nil {
		return fmt.Errorf("jepsen: healing %s on %s: %w", x.kind, x.target, err)
	}
	x.undo = nil
	return nil
}

// forget takes the fault as ended: the Env's Heal ended what it left.
func (x *envFault) forget() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.undo = nil
}

var _ Fault = (*envFault)(nil)

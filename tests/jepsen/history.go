package jepsen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// Outcome says how an operation ended, as its client knows it.
type Outcome string

// The outcomes of an operation.
const (
	// OK: the door answered, and Op.Output holds the answer.
	OK Outcome = "ok"
	// Fail: the operation did not happen (the connection was refused
	// before the request was sent), or a read failed. Failed operations
	// stay in the history file but the checkers leave them out.
	Fail Outcome = "fail"
	// Unknown: a write that may or may not have happened (a timeout, a
	// reset, a 5xx, the `unavailable` reason). The checkers take it as
	// answered at the end of the history, with any answer.
	Unknown Outcome = "unknown"
)

// The models an operation belongs to.
const (
	ModelRegister = "register" // PUT, GET, DELETE of one resource per key over HTTP
	ModelCreate   = "create"   // POST with an id over the WebSocket, GET over HTTP
	ModelStream   = "stream"   // PUTs of one resource whose notifications subscribers follow
)

// The answers an operation may record in Op.Output.
const (
	OutOK      = "ok"      // PUT or DELETE 200, GET 200 (Op.Value holds the value read)
	OutAbsent  = "absent"  // GET or DELETE 404
	OutCreated = "created" // POST `success`
	OutExists  = "exists"  // POST `exists`
)

// Op is one operation of a history: who invoked what on which node and
// key, what came back, and when, in nanoseconds of the history's
// monotonic clock.
type Op struct {
	Model  string `json:"model"`
	Client int    `json:"client"` // the process: a client takes a new one after an unknown outcome
	Node   int    `json:"node"`
	Kind   string `json:"kind"` // "put", "get", "delete", "post"
	Key    string `json:"key"`  // the resource, "/j1-r0"
	// Input is the value a PUT writes ({"v":Input}), or the mark of a
	// POST's entity ({"c":Input}).
	Input int64 `json:"input,omitempty"`
	// Output is the answer, one of the Out constants; empty unless the
	// outcome is OK.
	Output string `json:"output,omitempty"`
	// Value is the value a GET read ({"v":Value} or {"c":Value}).
	Value   int64   `json:"value,omitempty"`
	Outcome Outcome `json:"outcome"`
	Call    int64   `json:"call"`
	Return  int64   `json:"return"`
	// Answer is what the door said: the status line, the WebSocket
	// reply's code and reason, or the error.
	Answer string `json:"answer"`
	// Sabotaged marks an answer the sabotage switch changed.
	Sabotaged bool `json:"sabotaged,omitempty"`
}

// isWrite reports whether op changes the tree when it happens.
func (op Op) isWrite() bool { return op.Kind != "get" }

// Clock is the history's monotonic clock: nanoseconds since its start.
type Clock struct{ start time.Time }

// NewClock returns a clock started now.
func NewClock() Clock { return Clock{start: time.Now()} }

// Now returns the nanoseconds since the clock started (monotonic).
func (c Clock) Now() int64 { return int64(time.Since(c.start)) }

// History collects the operations of a run; its methods are safe for
// concurrent use.
type History struct {
	Clock Clock

	mu       sync.Mutex
	ops      []Op
	clients  int
	problems []string
}

// NewHistory returns an empty history whose clock starts now.
func NewHistory() *History { return &History{Clock: NewClock()} }

// NewClient returns a process id not handed out before (from 0 up, as
// porcupine's visualization wants them).
func (h *History) NewClient() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients++
	return h.clients - 1
}

// Add records op.
func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Problem records an answer the docs do not allow, or a failure of the
// harness: the run fails with it, whatever the checkers say.
func (h *History) Problem(s string) {
	h.mu.Lock()
	if len(h.problems) < 100 {
		h.problems = append(h.problems, s)
	}
	h.mu.Unlock()
}

// Ops returns a copy of the operations, sorted by call time.
func (h *History) Ops() []Op {
	h.mu.Lock()
	ops := append([]Op(nil), h.ops...)
	h.mu.Unlock()
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	return ops
}

// Problems returns the problems recorded.
func (h *History) Problems() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.problems...)
}

// writeJSONLines writes ops to path, one JSON object a line.
func writeJSONLines(path string, ops []Op) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadHistory reads a history file written by Run (JSON lines).
func ReadHistory(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ops []Op
	dec := json.NewDecoder(bufio.NewReader(f))
	for dec.More() {
		var op Op
		if err := dec.Decode(&op); err != nil {
			return nil, fmt.Errorf("jepsen: %s: operation %d: %w", path, len(ops)+1, err)
		}
		ops = append(ops, op)
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	return ops, nil
}

// Check checks a history (sorted by call time) with the register and
// create-if-absent models, as Run does, and returns the violations;
// with dir set, the visualizations go there.
func Check(ops []Op, dir string, timeout time.Duration) []Violation {
	var end int64
	for _, op := range ops {
		end = max(end, op.Return+1)
	}
	var vs []Violation
	for _, c := range []linearCheck{
		checkLinear(ModelRegister, registerModel, registerOp, ops, end, timeout, dir, false),
		checkLinear(ModelCreate, createModel, createOp, ops, end, timeout, dir, false),
	} {
		vs = append(vs, c.violations...)
	}
	return vs
}

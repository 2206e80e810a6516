package jepsen

import (
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Violation is a key whose history a model refuses.
type Violation struct {
	Model  string
	Key    string
	Detail string // what was wrong, for the stream checker; porcupine says only "not linearizable"
	HTML   string // porcupine's visualization of the key, if written
}

// String names the model, the key and the visualization.
func (v Violation) String() string {
	s := fmt.Sprintf("%s %s: %s", v.Model, v.Key, v.Detail)
	if v.HTML != "" {
		s += " (see " + v.HTML + ")"
	}
	return s
}

// linearCheck is the outcome of checking one model's operations.
type linearCheck struct {
	violations []Violation
	timedOut   []string // keys porcupine gave up on (neither proven nor refuted)
	problems   []string
}

// checkLinear checks the operations of one model against model, one
// partition per key, within timeout. conv turns an Op into porcupine's
// form (end is the end of the history, the return of unknown outcomes).
// With dir set, porcupine's visualization of every key is written there
// in one file, <model>.html, when a key is refused (always when
// verbose); each refused key is then found by checking the keys alone.
func checkLinear(name string, model porcupine.Model, conv func(Op, int64) porcupine.Operation,
	ops []Op, end int64, timeout time.Duration, dir string, verbose bool) linearCheck {
	byKey := map[string][]porcupine.Operation{}
	var all []porcupine.Operation
	for _, op := range ops {
		if op.Model != name || op.Outcome == Fail {
			continue
		}
		pop := conv(op, end)
		byKey[op.Key] = append(byKey[op.Key], pop)
		all = append(all, pop)
	}
	var c linearCheck
	if len(all) == 0 {
		return c
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	model.Partition = func([]porcupine.Operation) [][]porcupine.Operation {
		parts := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, byKey[k])
		}
		return parts
	}
	res, info := porcupine.CheckOperationsVerbose(model, all, timeout)
	var html string
	if dir != "" && (res == porcupine.Illegal || verbose) {
		html = filepath.Join(dir, name+".html")
		if err := porcupine.VisualizePath(model, info, html); err != nil {
			c.problems = append(c.problems, fmt.Sprintf("visualizing %s: %v", name, err))
			html = ""
		}
	}
	switch res {
	case porcupine.Unknown:
		c.timedOut = append(c.timedOut, fmt.Sprintf("(%d keys, %d operations, not decided within %v)", len(keys), len(all), timeout))
	case porcupine.Illegal:
		one := model
		one.Partition = nil
		for _, k := range keys {
			r, kinfo := porcupine.CheckOperationsVerbose(one, byKey[k], timeout)
			if r == porcupine.Illegal {
				c.violations = append(c.violations, Violation{Model: name, Key: k,
					Detail: fmt.Sprintf("not linearizable (%d operations on the key); %s", len(byKey[k]), stuck(one, byKey[k], kinfo)), HTML: html})
			}
		}
		if len(c.violations) == 0 {
			c.violations = append(c.violations, Violation{Model: name, Key: "(some key)", Detail: "not linearizable", HTML: html})
		}
	}
	return c
}

// stuck describes where the longest partial linearization of ops (one
// key's) ends: the state it reaches, and the earliest operation it could
// not place, with its node and times.
func stuck(model porcupine.Model, ops []porcupine.Operation, info porcupine.LinearizationInfo) string {
	var longest []int
	for _, part := range info.PartialLinearizations() {
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	state := model.Init()
	placed := make([]bool, len(ops))
	for _, i := range longest {
		_, state = model.Step(state, ops[i].Input, ops[i].Output)
		placed[i] = true
	}
	first := -1
	for i, op := range ops {
		if !placed[i] && (first < 0 || op.Call < ops[first].Call) {
			first = i
		}
	}
	if first < 0 {
		return "every operation placed"
	}
	op := ops[first]
	return fmt.Sprintf("the longest linearization places %d of %d operations and reaches %s; it cannot place %s (%s)",
		len(longest), len(ops), model.DescribeState(state), model.DescribeOperation(op.Input, op.Output), model.DescribeOperationMetadata(op.Metadata))
}

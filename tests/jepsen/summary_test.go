package jepsen

import (
	"strings"
	"testing"
	"time"
)

// TestSummary checks that runs add up per label and per fault kind, with
// the median and the max of the times to the first acknowledged write.
func TestSummary(t *testing.T) {
	ms := int64(time.Millisecond)
	var s Summary
	s.Add(Result{Label: "kill-node", Duration: 10 * time.Second, Ops: 1000, Unknown: 3,
		Faults: []FaultRecord{{Kind: KillNode, Inject: 0, FirstAck: 10 * ms}, {Kind: KillNode, Inject: 100 * ms, FirstAck: 130 * ms}}})
	s.Add(Result{Label: "kill-node", Duration: 10 * time.Second, Ops: 3000, Unknown: 1,
		Violations: []Violation{{Model: ModelRegister, Key: "/a"}}, History: "/h.jsonl",
		Faults: []FaultRecord{{Kind: KillNode, Inject: 0, FirstAck: 50 * ms}, {Kind: KillNode, Inject: 0, FirstAck: -1}}})
	s.Add(Result{Label: "mixed", Duration: 5 * time.Second, Ops: 500,
		Faults: []FaultRecord{{Kind: MoveLeader, Inject: 0, FirstAck: 7 * ms}}})
	var b strings.Builder
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	out := strings.Join(strings.Fields(b.String()), " ") // spacing aside
	for _, want := range []string{
		"kill-node 2 4000 200 4 1 0 0 4 30 ms 50 ms (1 none)",
		"mixed 1 500 100 0 0 0 0 1 7 ms 7 ms",
		"kill-node 4 30 ms 50 ms (1 none) move-leader 1 7 ms 7 ms",
		"violations under kill-node: /h.jsonl",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no line with %q", want)
		}
	}
	if s.Violations() != 1 {
		t.Errorf("Violations() = %d, want 1", s.Violations())
	}
}

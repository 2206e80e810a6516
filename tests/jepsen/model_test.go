package jepsen

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// reg returns a register operation on key k between call and ret (ms).
func reg(kind, k string, in int64, output string, value int64, call, ret int64) Op {
	return Op{Model: ModelRegister, Kind: kind, Key: k, Input: in, Output: output, Value: value, Outcome: OK, Call: call * 1e6, Return: ret * 1e6}
}

// unknown marks op's outcome unknown.
func unknown(op Op) Op {
	op.Outcome, op.Output, op.Value = Unknown, "", 0
	return op
}

// crt returns a create-if-absent operation on child k.
func crt(kind, k string, mark int64, output string, value int64, call, ret int64) Op {
	return Op{Model: ModelCreate, Kind: kind, Key: k, Input: mark, Output: output, Value: value, Outcome: OK, Call: call * 1e6, Return: ret * 1e6}
}

// TestModels checks small histories, each with one thing wrong or none,
// against the register and create-if-absent models.
func TestModels(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ops   []Op
		legal bool
	}{
		{"read own write", []Op{reg("put", "a", 1, OutOK, 0, 0, 10), reg("get", "a", 0, OutOK, 1, 20, 30)}, true},
		{"read before any write", []Op{reg("get", "a", 0, OutAbsent, 0, 0, 10), reg("put", "a", 1, OutOK, 0, 20, 30)}, true},
		{"concurrent read of either", []Op{reg("put", "a", 1, OutOK, 0, 0, 10), reg("put", "a", 2, OutOK, 0, 20, 40), reg("get", "a", 0, OutOK, 1, 25, 30)}, true},
		{"stale read", []Op{reg("put", "a", 1, OutOK, 0, 0, 10), reg("put", "a", 2, OutOK, 0, 20, 30), reg("get", "a", 0, OutOK, 1, 40, 50)}, false},
		{"lost write", []Op{reg("put", "a", 1, OutOK, 0, 0, 10), reg("get", "a", 0, OutAbsent, 0, 20, 30)}, false},
		{"read after delete", []Op{reg("put", "a", 1, OutOK, 0, 0, 10), reg("delete", "a", 0, OutOK, 0, 20, 30), reg("get", "a", 0, OutOK, 1, 40, 50)}, false},
		{"delete finds nothing", []Op{reg("put", "a", 1, OutOK, 0, 0, 10), reg("delete", "a", 0, OutAbsent, 0, 20, 30)}, false},
		{"delete finds something", []Op{reg("delete", "a", 0, OutOK, 0, 0, 10)}, false},
		{"unknown write read later", []Op{unknown(reg("put", "a", 1, "", 0, 0, 10)), reg("get", "a", 0, OutAbsent, 0, 20, 30), reg("get", "a", 0, OutOK, 1, 40, 50)}, true},
		{"unknown write never read", []Op{unknown(reg("put", "a", 1, "", 0, 0, 10)), reg("get", "a", 0, OutAbsent, 0, 20, 30)}, true},
		{"unknown write, then gone", []Op{unknown(reg("put", "a", 1, "", 0, 0, 10)), reg("get", "a", 0, OutOK, 1, 20, 30), reg("get", "a", 0, OutAbsent, 0, 50, 60)}, false},
		{"unknown delete", []Op{reg("put", "a", 1, OutOK, 0, 0, 10), unknown(reg("delete", "a", 0, "", 0, 20, 30)), reg("get", "a", 0, OutOK, 1, 40, 50), reg("get", "a", 0, OutAbsent, 0, 60, 70)}, true},
		{"keys apart", []Op{reg("put", "a", 1, OutOK, 0, 0, 10), reg("get", "b", 0, OutAbsent, 0, 20, 30)}, true},
		{"one create", []Op{crt("post", "c", 1, OutCreated, 0, 0, 10), crt("post", "c", 2, OutExists, 0, 5, 15), crt("get", "c", 0, OutOK, 1, 20, 30)}, true},
		{"two creates", []Op{crt("post", "c", 1, OutCreated, 0, 0, 10), crt("post", "c", 2, OutCreated, 0, 5, 15)}, false},
		{"exists before any create", []Op{crt("post", "c", 2, OutExists, 0, 0, 10), crt("post", "c", 1, OutCreated, 0, 20, 30)}, false},
		{"created, then absent", []Op{crt("post", "c", 1, OutCreated, 0, 0, 10), crt("get", "c", 0, OutAbsent, 0, 20, 30)}, false},
		{"the loser's mark", []Op{crt("post", "c", 1, OutCreated, 0, 0, 10), crt("post", "c", 2, OutExists, 0, 0, 10), crt("get", "c", 0, OutOK, 2, 20, 30)}, false},
		{"unknown create wins", []Op{unknown(crt("post", "c", 1, "", 0, 0, 10)), crt("post", "c", 2, OutExists, 0, 20, 30), crt("get", "c", 0, OutOK, 1, 40, 50)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := checkOps(tc.ops, t.TempDir())
			if got := len(c.violations) == 0; got != tc.legal {
				t.Errorf("legal = %v, want %v (violations %v, undecided %v)", got, tc.legal, c.violations, c.timedOut)
			}
			if !tc.legal && c.violations[0].HTML == "" {
				t.Errorf("no visualization written: %v", c.problems)
			}
		})
	}
}

// checkOps checks ops with both models, as Run does.
func checkOps(ops []Op, dir string) linearCheck {
	slices.SortStableFunc(ops, func(a, b Op) int { return int(a.Call - b.Call) })
	var end int64
	for _, op := range ops {
		end = max(end, op.Return+1)
	}
	r := checkLinear(ModelRegister, registerModel, registerOp, ops, end, time.Minute, dir, false)
	c := checkLinear(ModelCreate, createModel, createOp, ops, end, time.Minute, dir, false)
	r.violations = append(r.violations, c.violations...)
	r.timedOut = append(r.timedOut, c.timedOut...)
	r.problems = append(r.problems, c.problems...)
	return r
}

// TestSabotage checks that the sabotage switch turns a linearizable
// history into one where each model's check fails, on the keys it names.
func TestSabotage(t *testing.T) {
	var ops []Op
	for i, k := range []string{"a", "b"} {
		base := int64(i * 1000)
		ops = append(ops,
			reg("put", k, base+1, OutOK, 0, base, base+10),
			reg("put", k, base+2, OutOK, 0, base+20, base+30),
			reg("get", k, 0, OutOK, base+2, base+40, base+50),
			reg("get", k, 0, OutOK, base+2, base+60, base+70),
			crt("post", k+"/i1", base+3, OutCreated, 0, base, base+10),
			crt("post", k+"/i1", base+4, OutExists, 0, base+20, base+30),
			crt("get", k+"/i1", 0, OutOK, base+3, base+40, base+50),
		)
	}
	if c := checkOps(slices.Clone(ops), t.TempDir()); len(c.violations) > 0 {
		t.Fatalf("the history before sabotage is refused: %v", c.violations)
	}
	slices.SortStableFunc(ops, func(a, b Op) int { return int(a.Call - b.Call) })
	done, notes := sabotage(ops)
	if len(notes) > 0 {
		t.Fatalf("sabotage found no place: %v", notes)
	}
	c := checkOps(ops, t.TempDir())
	for m, keys := range done {
		for _, k := range keys {
			if !slices.ContainsFunc(c.violations, func(v Violation) bool { return v.Model == m && v.Key == k }) {
				t.Errorf("sabotage of %s %s not caught; violations %v", m, k, c.violations)
			}
		}
	}
	if len(done[ModelRegister]) != 2 || len(done[ModelCreate]) != 2 {
		t.Errorf("sabotaged %v, want two keys of each model", done)
	}
}

// sub returns a subscriber whose segments hold the seqs given (value =
// seq*10), each segment recovered when marked so.
func sub(id int, segs ...segment) *subscriber {
	return &subscriber{ID: id, Resource: "/s", Segments: segs}
}

// seg returns a segment with notifications of seqs.
func seg(since int64, recovered bool, seqs ...int64) segment {
	s := segment{Since: since, Recovered: recovered, Epoch: "e"}
	for _, q := range seqs {
		s.Notes = append(s.Notes, note{Seq: q, Value: q * 10})
	}
	return s
}

// TestCheckStream checks the stream checker on subscribers that agree
// and on each way they may not.
func TestCheckStream(t *testing.T) {
	write := func(v int64, call int64) Op {
		return Op{Model: ModelStream, Kind: "put", Key: "/s", Input: v, Output: OutOK, Outcome: OK, Call: call, Return: call + 1}
	}
	for _, tc := range []struct {
		name  string
		subs  []*subscriber
		ops   []Op
		final int64
		want  string // in the first violation; "" for none
	}{
		{"agree", []*subscriber{sub(0, seg(0, false, 1, 2, 3)), sub(1, seg(0, false, 2, 3))}, nil, 0, ""},
		{"resumed", []*subscriber{sub(0, seg(0, false, 1, 2), seg(2, true, 3, 4)), sub(1, seg(0, false, 1, 2, 3, 4))}, nil, 0, ""},
		{"not recovered, gap allowed", []*subscriber{sub(0, seg(0, false, 1), seg(1, false, 4)), sub(1, seg(0, false, 1, 2, 3, 4))}, nil, 0, ""},
		{"missing", []*subscriber{sub(0, seg(0, false, 1, 3)), sub(1, seg(0, false, 1, 2, 3))}, nil, 0, "seq 2 (value 20) missing"},
		{"missing across a resume", []*subscriber{sub(0, seg(0, false, 1), seg(1, true, 3)), sub(1, seg(0, false, 1, 2, 3))}, nil, 0, "seq 2 (value 20) missing"},
		{"older after newer", []*subscriber{sub(0, seg(0, false, 1, 3, 2))}, nil, 0, "seq 2 after seq 3"},
		{"older after a resume", []*subscriber{sub(0, seg(0, false, 1, 3), seg(3, false, 2))}, nil, 0, "seq 2 after seq 3"},
		{"values differ", []*subscriber{sub(0, seg(0, false, 1)), {ID: 1, Resource: "/s", Segments: []segment{{Notes: []note{{Seq: 1, Value: 11}}}}}}, nil, 0, "seq 1 is value"},
		{"acknowledged write not seen", []*subscriber{sub(0, seg(0, false, 1, 3))}, []Op{write(10, 5), write(25, 6), write(30, 7)}, 30, "never saw the acknowledged write of 25"},
		{"acknowledged writes seen", []*subscriber{sub(0, seg(0, false, 1, 2, 3))}, []Op{write(10, 5), write(20, 6), write(30, 7)}, 30, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := checkStream("/s", tc.subs, tc.ops, tc.final)
			switch {
			case tc.want == "" && len(vs) > 0:
				t.Errorf("violations %v, want none", vs)
			case tc.want != "" && (len(vs) == 0 || !strings.Contains(vs[0].Detail, tc.want)):
				t.Errorf("violations %v, want %q", vs, tc.want)
			}
		})
	}
	subs := []*subscriber{sub(0, seg(0, false, 1, 2, 3, 4)), sub(1, seg(0, false, 1, 2, 3, 4)), sub(2, seg(0, false, 1, 2, 3, 4))}
	if vs := checkStream("/s", subs, nil, 0); len(vs) > 0 {
		t.Fatalf("before sabotage: %v", vs)
	}
	did := sabotageStream(subs)
	vs := checkStream("/s", subs, nil, 0)
	for _, want := range []string{"missing", "after seq"} {
		if !slices.ContainsFunc(vs, func(v Violation) bool { return strings.Contains(v.Detail, want) }) {
			t.Errorf("sabotage %v: no violation %q in %v", did, want, vs)
		}
	}
}

package jepsen

import "fmt"

// The sabotage switch (RunConfig.Sabotage, RESO_JEPSEN_SABOTAGE=1) makes
// the recorder lie, so that a run shows its checkers fail: in each model,
// one read answers an overwritten value (a stale read) and one read no
// longer sees an acknowledged write (a lost write), on two different keys
// when the history allows it. Each lie is chosen so that no
// linearization can explain it, whatever the other operations did; the
// operations changed are marked Sabotaged in the history file.

// sabotaged is what the switch changed: the keys it lied about, by model.
type sabotaged map[string][]string

// sabotage changes ops in place (they must be sorted by call time) and
// returns what it changed, with a note for each lie it found no place for.
func sabotage(ops []Op) (sabotaged, []string) {
	done := sabotaged{}
	var notes []string
	for _, f := range []struct {
		model, what string
		lie         func([]Op, string) string
	}{
		{ModelRegister, "stale read", staleRegisterRead},
		{ModelRegister, "lost write", lostRegisterWrite},
		{ModelCreate, "lost create", lostCreate},
		{ModelCreate, "double create", doubleCreate},
	} {
		avoid := ""
		if ks := done[f.model]; len(ks) > 0 {
			avoid = ks[0]
		}
		k := f.lie(ops, avoid)
		if k == "" {
			k = f.lie(ops, "")
		}
		if k == "" {
			notes = append(notes, fmt.Sprintf("sabotage: no place for a %s in the %s history", f.what, f.model))
			continue
		}
		done[f.model] = append(done[f.model], k)
	}
	return done, notes
}

// ackedBefore returns the acknowledged operations of model and kind on
// key that returned before t.
func ackedBefore(ops []Op, model, kind, key string, t int64, output string) []int {
	var out []int
	for i, op := range ops {
		if op.Call >= t {
			break
		}
		if op.Model == model && op.Kind == kind && op.Key == key && op.Outcome == OK && op.Output == output && op.Return < t {
			out = append(out, i)
		}
	}
	return out
}

// staleRegisterRead makes a GET that began after two acknowledged PUTs,
// one after the other, answer the first one's value.
func staleRegisterRead(ops []Op, avoid string) string {
	for gi, g := range ops {
		if g.Model != ModelRegister || g.Kind != "get" || g.Outcome != OK || g.Key == avoid {
			continue
		}
		puts := ackedBefore(ops, ModelRegister, "put", g.Key, g.Call, OutOK)
		for _, p2 := range puts {
			for _, p1 := range puts {
				if ops[p1].Return < ops[p2].Call && ops[p1].Input != g.Value {
					ops[gi].Output, ops[gi].Value, ops[gi].Sabotaged = OutOK, ops[p1].Input, true
					return g.Key
				}
			}
		}
	}
	return ""
}

// lostRegisterWrite makes a GET that read an acknowledged PUT's value
// answer 404, where no DELETE of the key overlaps the time from the PUT's
// call to the GET's return.
func lostRegisterWrite(ops []Op, avoid string) string {
	for gi, g := range ops {
		if g.Model != ModelRegister || g.Kind != "get" || g.Outcome != OK || g.Output != OutOK || g.Key == avoid {
			continue
		}
		for _, pi := range ackedBefore(ops, ModelRegister, "put", g.Key, g.Call, OutOK) {
			p := ops[pi]
			if p.Input != g.Value || overlappingDelete(ops, g.Key, p.Call, g.Return) {
				continue
			}
			ops[gi].Output, ops[gi].Value, ops[gi].Sabotaged = OutAbsent, 0, true
			return g.Key
		}
	}
	return ""
}

// overlappingDelete reports whether a DELETE of key that may have
// happened overlaps [from, to].
func overlappingDelete(ops []Op, key string, from, to int64) bool {
	for _, op := range ops {
		if op.Model != ModelRegister || op.Kind != "delete" || op.Key != key || op.Outcome == Fail {
			continue
		}
		if op.Call <= to && (op.Outcome == Unknown || op.Return >= from) {
			return true
		}
	}
	return false
}

// lostCreate makes a GET of a child, which began after its POST was
// acknowledged `success`, answer 404.
func lostCreate(ops []Op, avoid string) string {
	for gi, g := range ops {
		if g.Model != ModelCreate || g.Kind != "get" || g.Outcome != OK || g.Output != OutOK || g.Key == avoid {
			continue
		}
		if len(ackedBefore(ops, ModelCreate, "post", g.Key, g.Call, OutCreated)) > 0 {
			ops[gi].Output, ops[gi].Value, ops[gi].Sabotaged = OutAbsent, 0, true
			return g.Key
		}
	}
	return ""
}

// doubleCreate makes a POST answered `exists`, which began after another
// POST of the same child was acknowledged `success`, answer `success`.
func doubleCreate(ops []Op, avoid string) string {
	for ei, e := range ops {
		if e.Model != ModelCreate || e.Kind != "post" || e.Outcome != OK || e.Output != OutExists || e.Key == avoid {
			continue
		}
		if len(ackedBefore(ops, ModelCreate, "post", e.Key, e.Call, OutCreated)) > 0 {
			ops[ei].Output, ops[ei].Sabotaged = OutCreated, true
			return e.Key
		}
	}
	return ""
}

package match

import (
	"regexp/syntax"
	"unicode/utf8"
)

// tailStep is one alternative of a Matcher's tail: the end of the text, or
// one ASCII byte of a set.
type tailStep struct {
	end bool
	set [2]uint64
}

// maxTail bounds the alternatives of a tail.
const maxTail = 8

// tailSteps returns the alternatives of prog from pc when each is one step
// (the end of the text, or one ASCII rune) followed by the match, in
// priority order; nil otherwise.
func tailSteps(prog *syntax.Prog, pc uint32) []tailStep {
	var steps []tailStep
	// matchAfter reports whether the instruction at pc leads to the match
	// through no-ops only.
	matchAfter := func(pc uint32) bool {
		for n := 0; n < len(prog.Inst); n++ {
			switch inst := &prog.Inst[pc]; inst.Op {
			case syntax.InstNop:
				pc = inst.Out
			case syntax.InstMatch:
				return true
			default:
				return false
			}
		}
		return false
	}
	var walk func(pc uint32, depth int) bool
	walk = func(pc uint32, depth int) bool {
		if depth > len(prog.Inst) || len(steps) > maxTail {
			return false
		}
		inst := &prog.Inst[pc]
		switch inst.Op {
		case syntax.InstNop:
			return walk(inst.Out, depth+1)
		case syntax.InstAlt:
			return walk(inst.Out, depth+1) && walk(inst.Arg, depth+1)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(inst.Arg) != syntax.EmptyEndText || !matchAfter(inst.Out) {
				return false
			}
			steps = append(steps, tailStep{end: true})
			return true
		case syntax.InstRune1, syntax.InstRune:
			if !asciiOnly(inst) || !matchAfter(inst.Out) {
				return false
			}
			var st tailStep
			for r := rune(0); r < utf8.RuneSelf; r++ {
				if inst.MatchRune(r) {
					st.set[r/64] |= 1 << (r % 64)
				}
			}
			steps = append(steps, st)
			return true
		}
		return false
	}
	if !walk(pc, 0) || len(steps) == 0 || len(steps) > maxTail {
		return nil
	}
	return steps
}

// asciiOnly reports whether the rune instruction inst matches ASCII runes
// only.
func asciiOnly(inst *syntax.Inst) bool {
	switch inst.Op {
	case syntax.InstRune1:
	case syntax.InstRune:
		if syntax.Flags(inst.Arg)&syntax.FoldCase != 0 || len(inst.Rune)%2 != 0 {
			return false // (?i)k also matches U+212A
		}
	default:
		return false
	}
	for _, r := range inst.Rune {
		if r < 0 || r >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// matchTail is Match for a Matcher with a tail, s starting with the prefix.
func (m *Matcher) matchTail(s string, caps []int) bool {
	pos := len(m.prefix)
	for i := range m.tail {
		st := &m.tail[i]
		switch {
		case st.end:
			if pos != len(s) {
				continue
			}
			caps[0], caps[1] = 0, pos
			return true
		case pos < len(s):
			// A byte from 0x80 is no ASCII rune: no step takes it.
			if c := s[pos]; c < utf8.RuneSelf && st.set[c/64]&(1<<(c%64)) != 0 {
				caps[0], caps[1] = 0, pos+1
				return true
			}
		}
	}
	return false
}

// nextBytes sets m.next, m.nextHigh and m.anyNext: the bytes that the
// instructions reachable from startPC without consuming text may consume
// first. It gives up (anyNext) unless startPos is the prefix's end, and at
// an assertion or a match, which need no byte.
func (m *Matcher) nextBytes() {
	if m.startPos != len(m.prefix) {
		m.anyNext = true
		return
	}
	insts := m.prog.Inst
	seen := make([]bool, len(insts))
	stack := []uint32{m.startPC}
	for len(stack) > 0 && !m.anyNext {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pc] {
			continue
		}
		seen[pc] = true
		inst := &insts[pc]
		switch inst.Op {
		case syntax.InstNop, syntax.InstCapture:
			stack = append(stack, inst.Out)
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, inst.Out, inst.Arg)
		case syntax.InstFail:
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			for r := rune(0); r < utf8.RuneSelf; r++ {
				if inst.MatchRune(r) {
					m.next[r/64] |= 1 << (r % 64)
				}
			}
			// A byte from 0x80 starts a rune past ASCII or decodes as
			// U+FFFD; whether an instruction that may take such a rune
			// does is left to the backtracker.
			m.nextHigh = m.nextHigh || !asciiOnly(inst)
		default: // InstEmptyWidth, InstMatch
			m.anyNext = true
		}
	}
}

// missNext reports whether s, which starts with the prefix, cannot match
// for the byte after the prefix (or the lack of one).
func (m *Matcher) missNext(s string) bool {
	if m.anyNext {
		return false
	}
	if len(s) == len(m.prefix) {
		return true
	}
	c := s[len(m.prefix)]
	if c >= utf8.RuneSelf {
		return !m.nextHigh
	}
	return m.next[c/64]&(1<<(c%64)) == 0
}

package match

import (
	"regexp/syntax"
	"sync"
	"unicode/utf8"
)

// scratch is the reusable state of one backtracking run.
type scratch struct {
	visited []uint64 // bit pc*(len(s)+1)+pos: (pc, pos) was tried
	jobs    []job
	cap     []int
}

// job is a pending branch of the backtracker. For an InstAlt with arg set,
// the Out branch is done and Arg is next; for an InstCapture with arg set,
// pos is the register value to restore.
type job struct {
	pos int
	pc  uint32
	arg bool
}

// maxPooledJobs bounds the job stack kept for reuse.
const maxPooledJobs = 1 << 16

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (b *scratch) release() {
	if cap(b.jobs) > maxPooledJobs {
		b.jobs = nil
	}
	scratchPool.Put(b)
}

// step returns the rune at pos of s and its width, or -1 and 0 at the end,
// decoding as package regexp does. The backtracker decodes ASCII itself and
// calls step for the rest.
func step(s string, pos int) (rune, int) {
	if pos < len(s) {
		if c := s[pos]; c < utf8.RuneSelf {
			return rune(c), 1
		}
		return utf8.DecodeRuneInString(s[pos:])
	}
	return -1, 0
}

// emptyContext returns the zero-width assertions that hold at pos of s.
func emptyContext(s string, pos int) syntax.EmptyOp {
	r1, r2 := rune(-1), rune(-1)
	if uint(pos-1) < uint(len(s)) {
		r1, _ = utf8.DecodeLastRuneInString(s[:pos])
	}
	if uint(pos) < uint(len(s)) {
		r2, _ = utf8.DecodeRuneInString(s[pos:])
	}
	return syntax.EmptyOpContext(r1, r2)
}

// backtrack runs prog anchored at the start of s, leftmost-first, and leaves
// the submatch indexes of a match in b.cap (of length ncap). It starts at
// instruction pc0 and position pos0, which the caller has found to be the
// only outcome of running prog up to there. ascii[pc] is the set of ASCII
// runes InstRune instruction pc matches. It visits each
// (instruction, position) pair at most once, so it runs in time
// O(len(prog.Inst) * len(s)).
func (b *scratch) backtrack(prog *syntax.Prog, ascii [][2]uint64, pc0 uint32, pos0 int, s string, ncap int) bool {
	insts := prog.Inst
	width := len(s) + 1
	nw := (len(insts)*width + 63) / 64
	if cap(b.visited) < nw {
		b.visited = make([]uint64, nw)
	} else {
		b.visited = b.visited[:nw]
		clear(b.visited)
	}
	if cap(b.cap) < ncap {
		b.cap = make([]int, ncap)
	}
	b.cap = b.cap[:ncap]
	for i := range b.cap {
		b.cap[i] = -1
	}
	b.cap[0] = 0
	visited := b.visited
	jobs := b.jobs[:0]

	// visit marks (pc, pos) and reports whether it was new.
	visit := func(pc uint32, pos int) bool {
		n := uint(int(pc)*width + pos)
		w, bit := n/64, uint64(1)<<(n%64)
		if visited[w]&bit != 0 {
			return false
		}
		visited[w] |= bit
		return true
	}

	if insts[pc0].Op == syntax.InstFail {
		return false
	}
	jobs = append(jobs, job{pc: pc0, pos: pos0})
	visit(pc0, pos0)
	for len(jobs) > 0 {
		l := len(jobs) - 1
		pc, pos, arg := jobs[l].pc, jobs[l].pos, jobs[l].arg
		jobs = jobs[:l]
		goto Skip

	CheckAndLoop:
		if !visit(pc, pos) {
			continue
		}
	Skip:
		{
			inst := &insts[pc]
			switch inst.Op {
			case syntax.InstFail:
				continue

			case syntax.InstAlt, syntax.InstAltMatch:
				// InstAltMatch (made only by package regexp's one-pass
				// compiler) is an alternation too. Out is preferred: come
				// back for Arg when every path from Out has failed, so that
				// Arg is tried first if a path from Out reaches it.
				if arg {
					arg = false
					pc = inst.Arg
					goto CheckAndLoop
				}
				jobs = append(jobs, job{pc: pc, pos: pos, arg: true})
				pc = inst.Out
				goto CheckAndLoop

			case syntax.InstRune:
				if pos < len(s) && s[pos] < utf8.RuneSelf {
					if c := s[pos]; ascii[pc][c/64]&(1<<(c%64)) == 0 {
						continue
					}
					pos++
					pc = inst.Out
					goto CheckAndLoop
				}
				r, w := step(s, pos)
				if w == 0 || !inst.MatchRune(r) {
					continue
				}
				pos += w
				pc = inst.Out
				goto CheckAndLoop

			case syntax.InstRune1:
				r, w := rune(-1), 1
				if pos < len(s) && s[pos] < utf8.RuneSelf {
					r = rune(s[pos])
				} else {
					r, w = step(s, pos)
				}
				if w == 0 || r != inst.Rune[0] {
					continue
				}
				pos += w
				pc = inst.Out
				goto CheckAndLoop

			case syntax.InstRuneAnyNotNL:
				r, w := rune(-1), 1
				if pos < len(s) && s[pos] < utf8.RuneSelf {
					r = rune(s[pos])
				} else {
					r, w = step(s, pos)
				}
				if w == 0 || r == '\n' {
					continue
				}
				pos += w
				pc = inst.Out
				goto CheckAndLoop

			case syntax.InstRuneAny:
				w := 1
				if pos >= len(s) || s[pos] >= utf8.RuneSelf {
					_, w = step(s, pos)
				}
				if w == 0 {
					continue
				}
				pos += w
				pc = inst.Out
				goto CheckAndLoop

			case syntax.InstCapture:
				if arg {
					// Every path after the capture failed: restore.
					b.cap[inst.Arg] = pos
					continue
				}
				if int(inst.Arg) < len(b.cap) {
					jobs = append(jobs, job{pc: pc, pos: b.cap[inst.Arg], arg: true})
					b.cap[inst.Arg] = pos
				}
				pc = inst.Out
				goto CheckAndLoop

			case syntax.InstEmptyWidth:
				if syntax.EmptyOp(inst.Arg)&^emptyContext(s, pos) != 0 {
					continue
				}
				pc = inst.Out
				goto CheckAndLoop

			case syntax.InstNop:
				pc = inst.Out
				goto CheckAndLoop

			case syntax.InstMatch:
				// Leftmost-first: the first match found is the answer.
				b.cap[1] = pos
				b.jobs = jobs[:0]
				return true

			default:
				panic("match: bad regexp instruction")
			}
		}
	}
	b.jobs = jobs[:0]
	return false
}

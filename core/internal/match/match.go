// Package match matches the route patterns of package core: a regular
// expression (RE2 syntax, as package regexp) anchored at the start of a
// target, run by a bounded backtracker that does not allocate, and an index
// over the patterns' literal prefixes that finds the candidate routes of a
// target in table order.
//
// A [Matcher] yields the leftmost-first submatches that regexp's
// FindStringSubmatchIndex yields for ^(?:pattern); the tests check it
// against package regexp.
package match

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxVisitedBits bounds the visited set of the backtracker (256 KiB). A
// pattern and target whose set would be larger are matched by regexp.
const maxVisitedBits = 256 * 1024 * 8

// Matcher matches a route pattern at the start of a string.
//
// The pattern is compiled as ^(?:pattern) with the flags of regexp.Compile
// and run by a bounded backtracker over the compiled program (the same
// algorithm as package regexp's backtracker), so that it yields the
// leftmost-first submatches regexp's FindStringSubmatchIndex yields, but
// reuses its scratch space: a match or a miss does not allocate.
type Matcher struct {
	re      *regexp.Regexp // package regexp's own matcher, used for targets too long to backtrack
	prog    *syntax.Prog   // nil when every match goes to re
	names   []string       // subexpression names, index i+1 is group i+1
	prefix  string         // literal text every match starts with
	literal bool           // the pattern is prefix exactly and has no groups
	ncap    int            // 2*(number of groups + 1)

	// Once s starts with prefix, backtracking may start at instruction
	// startPC and position startPos.
	startPC  uint32
	startPos int

	// ascii[pc] is the set of ASCII runes InstRune instruction pc matches.
	ascii [][2]uint64

	// next is the set of bytes a match may go on with after the prefix,
	// for a quick miss without backtracking: ASCII bytes by bit, and any
	// byte from 0x80 when nextHigh; anyNext when a match may also end
	// there or an assertion decides (no quick miss).
	next     [2]uint64
	nextHigh bool
	anyNext  bool

	// tail, when set, is the whole pattern after the prefix as
	// alternatives of one step each, in priority order: the pattern has no
	// groups and ends after the prefix with one of them, as
	// "(?:/|$|\?)" does. Match then needs no backtracking.
	tail []tailStep
}

// tailStep is one alternative of a Matcher's tail: the end of the text, or
// one ASCII byte of a set.
type tailStep struct {
	end bool
	set [2]uint64
}

// maxTail bounds the alternatives of a tail.
const maxTail = 8

// Compile compiles pattern into a Matcher of ^(?:pattern). It accepts
// exactly the patterns regexp.Compile accepts, and returns its error.
func Compile(pattern string) (*Matcher, error) {
	expr := `^(?:` + pattern + `)`
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	m := &Matcher{re: re, names: re.SubexpNames(), ncap: 2 * (re.NumSubexp() + 1)}
	// Parse and compile exactly as regexp.Compile does.
	sre, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(sre.Simplify())
	if err != nil {
		return nil, err
	}
	if prog.StartCond()&syntax.EmptyBeginText == 0 {
		// The pattern closes the wrapping group, as in "a)|(?:b", so the
		// expression is not anchored: leave it all to regexp.
		return m, nil
	}
	m.prog = prog
	m.ascii = make([][2]uint64, len(prog.Inst))
	for pc := range prog.Inst {
		if inst := &prog.Inst[pc]; inst.Op == syntax.InstRune {
			for r := rune(0); r < utf8.RuneSelf; r++ {
				if inst.MatchRune(r) {
					m.ascii[pc][r/64] |= 1 << (r % 64)
				}
			}
		}
	}
	m.prefix, m.literal, m.startPC, m.startPos = literalPrefix(prog)
	m.literal = m.literal && m.ncap == 2
	m.nextBytes()
	if m.ncap == 2 && m.startPos == len(m.prefix) && !m.literal {
		m.tail = tailSteps(prog, m.startPC)
	}
	return m, nil
}

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

// literalPrefix returns the literal text every match of the anchored
// prog starts with, and whether prog matches exactly that text. It also
// returns where the backtracker may start once the target starts with the
// prefix: the instruction reached from prog.Start through instructions that
// have no other outcome (no-ops, ^ at the start and literal runes), and the
// length of the runes they consume.
func literalPrefix(prog *syntax.Prog) (prefix string, complete bool, startPC uint32, startPos int) {
	var b strings.Builder
	pure, skip := true, true
	pc := uint32(prog.Start)
	startPC = pc
	for {
		inst := &prog.Inst[pc]
		switch inst.Op {
		case syntax.InstNop:
		case syntax.InstCapture:
			skip = false
		case syntax.InstEmptyWidth:
			// Zero width: it does not change the text a match starts with,
			// but only ^ at the start is sure to hold.
			if syntax.EmptyOp(inst.Arg) != syntax.EmptyBeginText || b.Len() > 0 {
				pure, skip = false, false
			}
		case syntax.InstRune1:
			r := inst.Rune[0]
			// An invalid byte of the target decodes as utf8.RuneError, so
			// U+FFFD (and a rune that cannot be encoded) is not literal text.
			if r == utf8.RuneError || !utf8.ValidRune(r) {
				return b.String(), false, startPC, startPos
			}
			b.WriteRune(r)
		case syntax.InstMatch:
			return b.String(), pure, startPC, startPos
		default:
			return b.String(), false, startPC, startPos
		}
		pc = inst.Out
		if skip {
			startPC, startPos = pc, b.Len()
		}
	}
}

// Names returns the names of the pattern's groups, as regexp's SubexpNames:
// the name of group g at index g, "" for the whole match and unnamed groups.
// The caller must not change the slice.
func (m *Matcher) Names() []string { return m.names }

// NumCaps returns the number of submatch indexes a match fills:
// 2*(number of groups + 1).
func (m *Matcher) NumCaps() int { return m.ncap }

// Prefix returns the literal text every match starts with, possibly "".
func (m *Matcher) Prefix() string { return m.prefix }

// Match reports whether the pattern matches at the start of s and fills
// caps[:m.NumCaps()] with the submatch indexes, as regexp's
// FindStringSubmatchIndex: caps[2*g] and caps[2*g+1] delimit group g (group 0
// is the whole match), -1 for groups that did not take part. caps must have
// length at least m.NumCaps(); it is left as is on a miss, and its elements
// past NumCaps are never written. It is safe for concurrent use.
//
// Match reuses pooled scratch space and does not allocate, except for a
// target too long for the backtracker (a visited set over 256 KiB: one bit
// per program instruction and target position) and for a pattern that
// closes the wrapping group, as "a)|(?:b": those go to package regexp.
func (m *Matcher) Match(s string, caps []int) bool {
	if len(s) < len(m.prefix) || s[:len(m.prefix)] != m.prefix {
		return false
	}
	if m.literal {
		caps[0], caps[1] = 0, len(m.prefix)
		return true
	}
	if m.tail != nil {
		return m.matchTail(s, caps)
	}
	if m.prog == nil || uint64(len(m.prog.Inst))*uint64(len(s)+1) > maxVisitedBits {
		return m.matchRegexp(s, caps)
	}
	if m.missNext(s) {
		return false
	}
	b := scratchPool.Get().(*scratch)
	ok := b.backtrack(m.prog, m.ascii, m.startPC, m.startPos, s, m.ncap)
	if ok {
		copy(caps[:m.ncap], b.cap)
	}
	b.release()
	return ok
}

// matchRegexp is Match by package regexp, which allocates.
func (m *Matcher) matchRegexp(s string, caps []int) bool {
	loc := m.re.FindStringSubmatchIndex(s)
	if loc == nil {
		return false
	}
	copy(caps, loc)
	return true
}

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

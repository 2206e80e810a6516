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

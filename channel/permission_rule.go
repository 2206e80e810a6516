package channel

import (
	"errors"
	"strings"
)

// Ops is a set of the operations rules rule on: [OpCreate], [OpRead],
// [OpUpdate], [OpDelete] and [OpSubscribe].
type Ops uint8

// The operations of docs/channel.md#permissions, each with its letter in
// the rule text.
const (
	OpCreate    Ops = 1 << iota // c: PUT of a resource without entity, POST
	OpRead                      // r: GET, the GET kept open, SUBSCRIBE with stream
	OpUpdate                    // u: PUT of an existing resource
	OpDelete                    // d: DELETE
	OpSubscribe                 // s: SUBSCRIBE, NOTIFY

	// AllOps is every operation.
	AllOps = OpCreate | OpRead | OpUpdate | OpDelete | OpSubscribe
)

// opLetters are the letters of the operations, in the order of their bits
// and of the canonical text.
const opLetters = "cruds"

// Kind is a kind of caller at a resource.
type Kind uint8

// The kinds of caller, in the order of the canonical rule text.
const (
	Self  Kind = iota // the creator of the resource or of an ancestor below the top level
	Group             // a member of the group in force at the resource
	Auth              // any other authenticated caller
	Anon              // a caller without credentials
	numKinds
)

// kindNames are the names of the kinds in the rule text.
var kindNames = [numKinds]string{"self", "group", "auth", "anon"}

// Rule is what each kind of caller may do at a resource and below it
// (docs/channel.md#the-rule-text). The zero Rule allows nothing. A kind
// the rule does not name may do nothing.
type Rule struct {
	ops   [numKinds]Ops
	named [numKinds]bool // which kinds the text named, for String
}

// maxRuleText bounds the text ParseRule reads: four fields and room for
// spaces.
const maxRuleText = 128

// ErrInvalidRule is the error of a rule text that does not parse.
var ErrInvalidRule = errors.New("channel: invalid rule")

// ParseRule reads a rule text: fields separated by spaces, each a kind
// (self, group, auth, anon), a colon and the letters of the operations it
// allows (c, r, u, d, s, each at most once, in any order) or "-" for
// none. A kind may appear once. The empty text is the zero Rule.
func ParseRule(text string) (Rule, error) {
	var r Rule
	if len(text) > maxRuleText {
		return r, ErrInvalidRule
	}
	for _, field := range strings.Fields(text) {
		name, letters, ok := strings.Cut(field, ":")
		if !ok || letters == "" {
			return Rule{}, ErrInvalidRule
		}
		k := kindOf(name)
		if k == numKinds || r.named[k] {
			return Rule{}, ErrInvalidRule
		}
		ops, ok := parseOps(letters)
		if !ok {
			return Rule{}, ErrInvalidRule
		}
		r.ops[k], r.named[k] = ops, true
	}
	return r, nil
}

// kindOf returns the kind named name, or numKinds.
func kindOf(name string) Kind {
	for k, n := range kindNames {
		if n == name {
			return Kind(k)
		}
	}
	return numKinds
}

// parseOps reads the letters of a field: "-", or letters of opLetters,
// each at most once.
func parseOps(letters string) (Ops, bool) {
	if letters == "-" {
		return 0, true
	}
	var ops Ops
	for i := 0; i < len(letters); i++ {
		j := strings.IndexByte(opLetters, letters[i])
		if j < 0 || ops&(1<<j) != 0 {
			return 0, false
		}
		ops |= 1 << j
	}
	return ops, true
}

// String returns the canonical text of r: the kinds it names in the order
// self, group, auth, anon, each with its letters in the order c, r, u, d,
// s ("-" for none). It parses back to r.
func (r Rule) String() string {
	var b []byte
	for k := range numKinds {
		if !r.named[k] {
			continue
		}
		b = r.appendField(b, k)
	}
	return string(b)
}

// full returns the text of r with all four kinds named.
func (r Rule) full() string {
	var b []byte
	for k := range numKinds {
		b = r.appendField(b, k)
	}
	return string(b)
}

// appendField appends the field of kind k.
func (r Rule) appendField(b []byte, k Kind) []byte {
	if len(b) > 0 {
		b = append(b, ' ')
	}
	b = append(b, kindNames[k]...)
	b = append(b, ':')
	if r.ops[k] == 0 {
		return append(b, '-')
	}
	for i := range len(opLetters) {
		if r.ops[k]&(1<<i) != 0 {
			b = append(b, opLetters[i])
		}
	}
	return b
}

// Allows reports whether r lets kind k do every operation of ops.
func (r Rule) Allows(k Kind, ops Ops) bool {
	return k < numKinds && r.ops[k]&ops == ops
}

// narrow keeps of r what o allows too.
func (r *Rule) narrow(o *Rule) {
	for k := range numKinds {
		r.ops[k] &= o.ops[k]
	}
}

// openRule lets every kind do everything: the rule of every top-level
// path when no configuration is given.
var openRule = Rule{
	ops:   [numKinds]Ops{AllOps, AllOps, AllOps, AllOps},
	named: [numKinds]bool{true, true, true, true},
}

package channel

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Rules are the rules of the top-level paths, the start of every
// resource's rights (docs/channel.md#the-configuration--channel-rules).
// The zero value and nil give every top-level path the open rule: every
// kind of caller may do everything.
type Rules struct {
	top map[string]*Rule // by top-level segment
	def *Rule            // "*": the others and the root; nil means open
}

// maxRulesFile bounds the configuration ParseRules reads.
const maxRulesFile = 1 << 20

// ParseRules reads a configuration of top-level rules: one line per path,
// the path ("/name", or "*" for every top-level path not named and the
// root), spaces or tabs and its rule (see [ParseRule]). Blank lines and lines
// starting with # are skipped. An error names the line.
func ParseRules(r io.Reader) (*Rules, error) {
	rs := &Rules{top: make(map[string]*Rule)}
	sc := bufio.NewScanner(io.LimitReader(r, maxRulesFile))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		path, rest := text, ""
		if i := strings.IndexAny(text, " \t"); i >= 0 {
			path, rest = text[:i], text[i+1:]
		}
		rule, err := ParseRule(rest)
		if err != nil {
			return nil, fmt.Errorf("channel: rules line %d: invalid rule", line)
		}
		if path == "*" {
			if rs.def != nil {
				return nil, fmt.Errorf("channel: rules line %d: * given twice", line)
			}
			rs.def = &rule
			continue
		}
		name, ok := strings.CutPrefix(path, "/")
		if !ok || !validSegment(name) {
			return nil, fmt.Errorf("channel: rules line %d: not a top-level path", line)
		}
		if _, dup := rs.top[name]; dup {
			return nil, fmt.Errorf("channel: rules line %d: %s given twice", line, path)
		}
		rs.top[name] = &rule
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("channel: rules: %w", err)
	}
	return rs, nil
}

// of returns the rule of the top-level path name; "" is the root.
func (rs *Rules) of(name string) *Rule {
	if rs != nil {
		if r := rs.top[name]; r != nil {
			return r
		}
		if rs.def != nil {
			return rs.def
		}
	}
	return &openRule
}

// Canonical returns the text of the rules in force: one line per named
// top-level path, sorted, then the line of "*" (the open rule when none was
// given), each rule with its four kinds. Configurations that give every
// path the same rights have the same text, whatever their order, spacing
// and comments; nil and the zero Rules give "* self:cruds group:cruds
// auth:cruds anon:cruds". It parses back to rules of the same rights.
func (rs *Rules) Canonical() string {
	var names []string
	def := &openRule
	if rs != nil {
		for name := range rs.top {
			names = append(names, name)
		}
		if rs.def != nil {
			def = rs.def
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		b.WriteString("/" + name + " " + rs.top[name].full() + "\n")
	}
	b.WriteString("* " + def.full() + "\n")
	return b.String()
}

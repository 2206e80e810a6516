package channel

import (
	"bufio"
	"fmt"
	"io"
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
// root), spaces and its rule (see [ParseRule]). Blank lines and lines
// starting with # are skipped. An error names the line.
func ParseRules(r io.Reader) (*Rules, error) {
	rs := &Rules{top: make(map[string]*Rule)}
	sc := bufio.NewScanner(io.LimitReader(r, maxRulesFile))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		path, rest, _ := strings.Cut(text, " ")
		rule, err := ParseRule(strings.TrimSpace(rest))
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

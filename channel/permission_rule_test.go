package channel

import (
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for _, c := range []struct {
		text, want string // want "" with bad: it does not parse
		bad        bool
	}{
		{text: "", want: ""},
		{text: "self:cruds group:rs auth:r anon:-", want: "self:cruds group:rs auth:r anon:-"},
		{text: "  anon:sr   self:dcu  ", want: "self:cud anon:rs"},
		{text: "group:-", want: "group:-"},
		{text: "auth:scrud", want: "auth:cruds"},
		{text: "self", bad: true},
		{text: "self:", bad: true},
		{text: "self:x", bad: true},
		{text: "self:rr", bad: true},
		{text: "self:r- ", bad: true},
		{text: "self:r self:w", bad: true},
		{text: "self:r self:r", bad: true},
		{text: "owner:r", bad: true},
		{text: "SELF:r", bad: true},
		{text: "self:R", bad: true},
		{text: "self=r", bad: true},
		{text: "self:r\x00", bad: true},
		{text: strings.Repeat(" ", 200) + "self:r", bad: true},
	} {
		r, err := ParseRule(c.text)
		if c.bad {
			if err == nil {
				t.Errorf("ParseRule(%q) = %q, want an error", c.text, r)
			}
			continue
		}
		if err != nil || r.String() != c.want {
			t.Errorf("ParseRule(%q) = %q, %v; want %q", c.text, r, err, c.want)
		}
	}
}

func TestRuleAllows(t *testing.T) {
	r, err := ParseRule("self:cruds group:rs auth:r")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k    Kind
		ops  Ops
		want bool
	}{
		{Self, AllOps, true}, {Group, OpRead | OpSubscribe, true}, {Group, OpUpdate, false},
		{Auth, OpRead, true}, {Auth, OpRead | OpSubscribe, false}, {Anon, OpRead, false},
	} {
		if got := r.Allows(c.k, c.ops); got != c.want {
			t.Errorf("Allows(%s, %b) = %v", kindNames[c.k], c.ops, got)
		}
	}
	if r.full() != "self:cruds group:rs auth:r anon:-" {
		t.Errorf("full %q", r.full())
	}
}

// FuzzParseRule checks that any text either fails or parses to a rule
// whose canonical text parses back to the same rule and is a fixed point.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"", "self:cruds group:rs auth:r anon:-", "anon:sr self:dcu", "group:-", "self:rr", "x:y", "self:r\tauth:-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := ParseRule(text)
		if err != nil {
			return
		}
		s := r.String()
		r2, err := ParseRule(s)
		if err != nil {
			t.Fatalf("%q gave %q, which does not parse: %v", text, s, err)
		}
		if r2 != r || r2.String() != s {
			t.Fatalf("%q gave %q, which parses to %q", text, s, r2)
		}
		for k := range numKinds {
			if r.ops[k]&^AllOps != 0 {
				t.Fatalf("%q: ops %b of %s", text, r.ops[k], kindNames[k])
			}
		}
	})
}

func TestParseRules(t *testing.T) {
	rs, err := ParseRules(strings.NewReader("# comment\n\n/rooms  self:cruds anon:r\n*\tauth:r\n"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"rooms": "self:cruds anon:r", "other": "auth:r", "": "auth:r"} {
		if got := rs.of(name).String(); got != want {
			t.Errorf("rule of %q = %q, want %q", name, got, want)
		}
	}
	if got := (*Rules)(nil).of("x").String(); got != "self:cruds group:cruds auth:cruds anon:cruds" {
		t.Errorf("no rules: %q", got)
	}
	for text, want := range map[string]string{
		"/a self:r\n/a auth:r":       "line 2: /a given twice",
		"* self:r\n\n* auth:r":       "line 3: * given twice",
		"/a/b self:r":                "line 1: not a top-level path",
		"a self:r":                   "line 1: not a top-level path",
		"# x\n/a self:q":             "line 2: invalid rule",
		"/a%20b self:r":              "line 1: not a top-level path",
		"/a self:r\n/.. auth:r\n":    "line 2: not a top-level path",
		"/a self:r extra:r auth:r\n": "line 1: invalid rule",
	} {
		_, err := ParseRules(strings.NewReader(text))
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("ParseRules(%q) = %v, want ...%s", text, err, want)
		}
	}
}

// TestRulesCanonical: the canonical text names the rights of the rules
// in force: order, spacing, comments and unnamed kinds do not count, a
// different right does; it parses back to the same text.
func TestRulesCanonical(t *testing.T) {
	parse := func(text string) *Rules {
		t.Helper()
		rs, err := ParseRules(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	open := "* self:cruds group:cruds auth:cruds anon:cruds\n"
	for _, c := range []struct {
		rules *Rules
		want  string
	}{
		{nil, open},
		{parse("# nothing\n"), open},
		{parse("* anon:cruds self:cruds auth:cruds group:cruds"), open},
		{parse("/rooms  self:cruds anon:r\n*\tauth:r\n/a self:-\n"),
			"/a self:- group:- auth:- anon:-\n/rooms self:cruds group:- auth:- anon:r\n* self:- group:- auth:r anon:-\n"},
		{parse("*\tauth:r\n# x\n/a  group:-\n/rooms anon:r self:sudrc"),
			"/a self:- group:- auth:- anon:-\n/rooms self:cruds group:- auth:- anon:r\n* self:- group:- auth:r anon:-\n"},
		{parse("/rooms self:cruds anon:rs\n* auth:r\n/a self:-\n"),
			"/a self:- group:- auth:- anon:-\n/rooms self:cruds group:- auth:- anon:rs\n* self:- group:- auth:r anon:-\n"},
	} {
		got := c.rules.Canonical()
		if got != c.want {
			t.Errorf("Canonical = %q, want %q", got, c.want)
		}
		if again := parse(got).Canonical(); again != got {
			t.Errorf("Canonical of %q = %q", got, again)
		}
	}
}

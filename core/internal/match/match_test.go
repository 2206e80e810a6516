package match

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reso-project/reso/internal/race"
)

var matchPatterns = []string{
	"", "a", "abc", "/a", "/ab", "/file/", "(a)", "(a)|(b)", "(a)?b", "(a)?(b)?",
	"(a|ab)(c|bcd)(d*)", "(?P<x>a*)(?P<y>a*)", "a*", "a*?", "a+?", ".*", ".*?",
	"(.*)/(.*)", "(.*?)/(.*)", "(.*?)/(.*?)", "(?s).*", "(?s).", ".", "(?i)abc",
	"(?i)straße", "(?i:K)", "(?i)[k]", "(?i)ǅ", "x$", "x\\b", "\\bx\\b", "\\B",
	"x\\B", "^", "$", "^$", "a^b", "a$b", "(?m)^a$", "(?m)a$\\n^b", "\\A", "\\z",
	"[a-z]+", "[^/]+", "[[:alpha:]]+", "\\pL+", "\\p{Greek}+", "é+", "[é-ö]+",
	"(a*)*", "(a*)+", "(a|b)*c", "(a+)(b+)?", "(?:(a)|(b))+", "(a|b)*?b",
	"a{2,3}", "a{2,}?", "(a){0}", "(a){0}b", "(?U)a+", "(?U)(a+?)(a*)",
	"\\x{FFFD}", "\\x{FFFD}a", "[\\x{FFFD}]", "\\d+\\.\\d+", "[[:^alpha:]]",
	"((((((a))))))", "[^\\x00-\\x{10FFFF}]", "a|b|c", "ab|a", "a|ab", "()",
	"(|a)", "(a|)", "\\Qa.b\\E", "a)|(?:b", "a)(?:b", ")(", "(?i)a)|(?:B",
	"/(?P<type>xml|plain)/(?P<path>.*)", "/json/(?P<path>.*)",
	"/config\\?directory=(?P<directory>[^&]*)", "/config(?:$|\\?)",
	"/files(?:/|$|\\?)", "/api/v1/res001/(?P<id>[0-9]+)(?:/(?P<sub>[a-z]+))?",
	"/(?P<any>[^?]*)\\?debug=1", "/x(?:/|$|\\?)", "(?:$|\\?)", "a(?:b|$)", "a(?:$|b)",
	"a(?:b|bc)", "x(?:[a-c]|$)", "x(?:é|$)", "x(?i:k|$)", "x(?:[^/]|$)", "x(?:.|$)",
	"x(?:a|\\b)", "x(?:$|$)", "x(?:a|(?:b|$))", "(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)",
}

var matchInputs = []string{
	"", "a", "aa", "ab", "abc", "abcd", "aaa", "aab", "b", "bc", "bbc", "/a", "/ab",
	"/xml/x/y", "/json/", "/config", "/config?x", "/config?directory=a&b",
	"/files", "/files/", "/filesx", "/api/v1/res001/12/name", "/api/v1/res001/x",
	"/p?debug=1", "x", "x y", "xy", "ABC", "aBc", "Straße", "STRASSE", "k", "K",
	"\u212a", "ǅ", "ǆ", "Ǆ", "é", "éö", "\xff", "\xffa", "a\xff", "\ufffd", "\ufffda",
	"1.5", "12.34x", "αβγ", "a\nb", "\n", ".", "a/b/c", "a.b", "a.bc", "xxxxx",
	"\xe2\x82", "\xe2\x82a", "a\xe2\x82", "xa", "xé", "xk", "xK", "x\u212a", "x\xff",
	"/x", "/x/", "/x?", "/xy", "x/", "x\n", "x?",
}

// refMatch is the expected result: package regexp's submatch indices of
// ^(?:pattern) on s, or nil.
func refMatch(re *regexp.Regexp, s string) []int {
	return re.FindStringSubmatchIndex(s)
}

// checkMatch compares m.Match with regexp on s.
func checkMatch(t *testing.T, pattern string, re *regexp.Regexp, m *Matcher, s string) {
	t.Helper()
	want := refMatch(re, s)
	caps := make([]int, m.NumCaps()+2)
	for i := range caps {
		caps[i] = -7
	}
	ok := m.Match(s, caps)
	if ok != (want != nil) {
		t.Fatalf("pattern %q on %q: match = %v, regexp %v", pattern, s, ok, want)
	}
	if !ok {
		return
	}
	if len(want) != m.NumCaps() {
		t.Fatalf("pattern %q: ncap %d, regexp gives %d indexes", pattern, m.NumCaps(), len(want))
	}
	if !slices.Equal(caps[:m.NumCaps()], want) {
		t.Fatalf("pattern %q on %q: caps %v, regexp %v", pattern, s, caps[:m.NumCaps()], want)
	}
	if caps[m.NumCaps()] != -7 || caps[m.NumCaps()+1] != -7 {
		t.Fatalf("pattern %q on %q: wrote past ncap: %v", pattern, s, caps)
	}
}

// TestMatchTable compares Matcher with regexp on ^(?:pattern).
func TestMatchTable(t *testing.T) {
	for _, p := range matchPatterns {
		re, err := regexp.Compile(`^(?:` + p + `)`)
		m, merr := Compile(p)
		if (err == nil) != (merr == nil) {
			t.Fatalf("pattern %q: Compile error %v, regexp %v", p, merr, err)
		}
		if err != nil {
			continue
		}
		if !slices.Equal(m.Names(), re.SubexpNames()) {
			t.Fatalf("pattern %q: names %q, regexp %q", p, m.Names(), re.SubexpNames())
		}
		for _, s := range matchInputs {
			checkMatch(t, p, re, m, s)
			checkMatch(t, p, re, m, s+s)
		}
	}
}

// TestMatchPrefix checks the literal prefixes and the fast paths chosen.
func TestMatchPrefix(t *testing.T) {
	for _, tc := range []struct {
		pattern, prefix string
		literal         bool
		backtrack       bool
	}{
		{"/file/", "/file/", true, true},
		{"", "", true, true},
		{"/a(b)", "/ab", false, true},
		{"/a(?:b)", "/ab", true, true},
		{"/api/v1/res001/(?P<id>[0-9]+)", "/api/v1/res001/", false, true},
		{"/config(?:$|\\?)", "/config", false, true},
		{"/x$", "/x", false, true},
		{"/x\\b", "/x", false, true},
		{"(?i)/x", "/", false, true},
		{"/\\x{FFFD}x", "/", false, true},
		{"/a|/b", "/", false, true},
		{"a)|(?:b", "", false, false},
		{"[^\\x00-\\x{10FFFF}]", "", false, true},
	} {
		m, err := Compile(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if m.Prefix() != tc.prefix || m.literal != tc.literal || (m.prog != nil) != tc.backtrack {
			t.Errorf("pattern %q: prefix %q literal %v backtrack %v, want %q %v %v",
				tc.pattern, m.Prefix(), m.literal, m.prog != nil, tc.prefix, tc.literal, tc.backtrack)
		}
	}
}

// TestMatchLong covers targets too long for the backtracker's visited set,
// which go to regexp.
func TestMatchLong(t *testing.T) {
	for _, p := range []string{"(a+)+b", "(a*)(.*)", "/(?P<x>[a-z]*)/(?P<y>.*)$", ".*x"} {
		re := regexp.MustCompile(`^(?:` + p + `)`)
		m, err := Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{
			strings.Repeat("a", 300000),
			strings.Repeat("a", 300000) + "b",
			"/" + strings.Repeat("a", 150000) + "/" + strings.Repeat("b", 150000),
			strings.Repeat("a", 1000) + "x",
		} {
			checkMatch(t, p, re, m, s)
		}
	}
}

// TestMatchAllocs checks that a hit or a miss allocates nothing.
func TestMatchAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	m, err := Compile("/api/v1/res001/(?P<id>[0-9]+)(?:/(?P<sub>[a-z]+))?")
	if err != nil {
		t.Fatal(err)
	}
	caps := make([]int, m.NumCaps())
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"/api/v1/res001/12/name", true},
		{"/api/v1/res001/12", true},
		{"/api/v1/res001/x", false},
		{"/other", false},
	} {
		if m.Match(tc.s, caps) != tc.want {
			t.Fatalf("match(%q) != %v", tc.s, tc.want)
		}
		if n := testing.AllocsPerRun(100, func() { m.Match(tc.s, caps) }); n != 0 {
			t.Errorf("match(%q): %v allocations", tc.s, n)
		}
	}
}

// FuzzMatch compares Matcher with regexp on ^(?:pattern).
func FuzzMatch(f *testing.F) {
	for i, p := range matchPatterns {
		f.Add(p, matchInputs[i%len(matchInputs)])
		f.Add(p, matchInputs[(i*7+3)%len(matchInputs)])
	}
	f.Fuzz(func(t *testing.T, pattern, input string) {
		if len(pattern) > 256 || len(input) > 1024 {
			return // long inputs only slow the search down
		}
		re, err := regexp.Compile(`^(?:` + pattern + `)`)
		if err != nil {
			return
		}
		m, err := Compile(pattern)
		if err != nil {
			t.Fatalf("pattern %q: Compile: %v, regexp accepts it", pattern, err)
		}
		checkMatch(t, pattern, re, m, input)
	})
}

// TestMatchQuick: the usual route endings match without backtracking (a
// tail of one-step alternatives), and a pattern whose next byte after the
// prefix cannot be the target's misses at once; both agree with regexp
// (TestMatchTable and FuzzMatch).
func TestMatchQuick(t *testing.T) {
	for _, c := range []struct {
		pattern string
		tail    bool
	}{
		{`/config(?:$|\?)`, true},
		{`/files(?:/|$|\?)`, true},
		{`/(?:$|\?)`, true},
		{`/x(?:ab|$)`, false},
		{`/x(?i:k|$)`, false},
		{`/(?P<g>a|$)`, false},
		{`/x(?:é|$)`, false},
	} {
		m, err := Compile(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.tail != nil; got != c.tail {
			t.Errorf("%q: tail %v, want %v", c.pattern, got, c.tail)
		}
	}
	for _, c := range []struct {
		pattern, s string
		miss       bool
	}{
		{`/(?P<type>xml|plain|html)/(?P<path>.*)`, "/config", true},
		{`/(?P<type>xml|plain|html)/(?P<path>.*)`, "/", true},
		{`/(?P<type>xml|plain|html)/(?P<path>.*)`, "/xml/a", false},
		{`/(?P<type>xml|plain|html)/(?P<path>.*)`, "/\xffa", true},
		{`/(?P<a>.*)`, "/", false},
		{`/(?i)k`, "/\u212a", false},
	} {
		m, err := Compile(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.missNext(c.s); got != c.miss {
			t.Errorf("%q on %q: quick miss %v, want %v", c.pattern, c.s, got, c.miss)
		}
	}
}

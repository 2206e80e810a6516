package core

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
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
	"/(?P<any>[^?]*)\\?debug=1", "(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)(x*)",
}

var matchInputs = []string{
	"", "a", "aa", "ab", "abc", "abcd", "aaa", "aab", "b", "bc", "bbc", "/a", "/ab",
	"/xml/x/y", "/json/", "/config", "/config?x", "/config?directory=a&b",
	"/files", "/files/", "/filesx", "/api/v1/res001/12/name", "/api/v1/res001/x",
	"/p?debug=1", "x", "x y", "xy", "ABC", "aBc", "Straße", "STRASSE", "k", "K",
	"\u212a", "ǅ", "ǆ", "Ǆ", "é", "éö", "\xff", "\xffa", "a\xff", "\ufffd", "\ufffda",
	"1.5", "12.34x", "αβγ", "a\nb", "\n", ".", "a/b/c", "a.b", "a.bc", "xxxxx",
	"\xe2\x82", "\xe2\x82a", "a\xe2\x82",
}

// refMatch is the expected result: package regexp's submatch indices of
// ^(?:pattern) on s, or nil.
func refMatch(re *regexp.Regexp, s string) []int {
	return re.FindStringSubmatchIndex(s)
}

// checkMatch compares m.match with regexp on s.
func checkMatch(t *testing.T, pattern string, re *regexp.Regexp, m *matcher, s string) {
	t.Helper()
	want := refMatch(re, s)
	caps := make([]int, m.ncap+2)
	for i := range caps {
		caps[i] = -7
	}
	ok := m.match(s, caps)
	if ok != (want != nil) {
		t.Fatalf("pattern %q on %q: match = %v, regexp %v", pattern, s, ok, want)
	}
	if !ok {
		return
	}
	if len(want) != m.ncap {
		t.Fatalf("pattern %q: ncap %d, regexp gives %d indexes", pattern, m.ncap, len(want))
	}
	if !slices.Equal(caps[:m.ncap], want) {
		t.Fatalf("pattern %q on %q: caps %v, regexp %v", pattern, s, caps[:m.ncap], want)
	}
	if caps[m.ncap] != -7 || caps[m.ncap+1] != -7 {
		t.Fatalf("pattern %q on %q: wrote past ncap: %v", pattern, s, caps)
	}
}

// TestMatchTable compares matcher with regexp on ^(?:pattern).
func TestMatchTable(t *testing.T) {
	for _, p := range matchPatterns {
		re, err := regexp.Compile(`^(?:` + p + `)`)
		m, merr := compileMatcher(p)
		if (err == nil) != (merr == nil) {
			t.Fatalf("pattern %q: compileMatcher error %v, regexp %v", p, merr, err)
		}
		if err != nil {
			continue
		}
		if !slices.Equal(m.names, re.SubexpNames()) {
			t.Fatalf("pattern %q: names %q, regexp %q", p, m.names, re.SubexpNames())
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
		m, err := compileMatcher(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if m.prefix != tc.prefix || m.literal != tc.literal || (m.prog != nil) != tc.backtrack {
			t.Errorf("pattern %q: prefix %q literal %v backtrack %v, want %q %v %v",
				tc.pattern, m.prefix, m.literal, m.prog != nil, tc.prefix, tc.literal, tc.backtrack)
		}
	}
}

// TestMatchLong covers targets too long for the backtracker's visited set,
// which go to regexp.
func TestMatchLong(t *testing.T) {
	for _, p := range []string{"(a+)+b", "(a*)(.*)", "/(?P<x>[a-z]*)/(?P<y>.*)$", ".*x"} {
		re := regexp.MustCompile(`^(?:` + p + `)`)
		m, err := compileMatcher(p)
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

func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

// TestMatchAllocs checks that a hit or a miss allocates nothing.
func TestMatchAllocs(t *testing.T) {
	if raceEnabled() {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	m, err := compileMatcher("/api/v1/res001/(?P<id>[0-9]+)(?:/(?P<sub>[a-z]+))?")
	if err != nil {
		t.Fatal(err)
	}
	caps := make([]int, m.ncap)
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"/api/v1/res001/12/name", true},
		{"/api/v1/res001/12", true},
		{"/api/v1/res001/x", false},
		{"/other", false},
	} {
		if m.match(tc.s, caps) != tc.want {
			t.Fatalf("match(%q) != %v", tc.s, tc.want)
		}
		if n := testing.AllocsPerRun(100, func() { m.match(tc.s, caps) }); n != 0 {
			t.Errorf("match(%q): %v allocations", tc.s, n)
		}
	}
	rt := newBenchRouter(t, generatedRoutes(200))
	for _, target := range []string{"/api/v1/res000/1/a", "/api/v1/res100/42", "/x/y?debug=1", "/nothing"} {
		if n := testing.AllocsPerRun(100, func() { rt.Lookup("GET", target) }); n != 0 {
			t.Errorf("Lookup(%q): %v allocations", target, n)
		}
	}
}

// FuzzMatch compares matcher with regexp on ^(?:pattern).
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
		m, err := compileMatcher(pattern)
		if err != nil {
			t.Fatalf("pattern %q: compileMatcher: %v, regexp accepts it", pattern, err)
		}
		checkMatch(t, pattern, re, m, input)
	})
}

// TestRouterOrder checks that the first matching route wins when prefixes
// overlap.
func TestRouterOrder(t *testing.T) {
	rt := newBenchRouter(t, []string{"GET /a", "GET /ab", "GET /(?P<x>.*)", "POST /ab", "GET,POST /ab(?P<y>c)?"})
	for _, tc := range []struct {
		method, target string
		want           int
	}{
		{"GET", "/a", 0},
		{"GET", "/ab", 0}, // matched at the start, not the whole target
		{"GET", "/b", 2},
		{"GET", "", -1},
		{"POST", "/ab", 3},
		{"POST", "/abc", 3},
		{"POST", "/a", -1},
		{"PUT", "/ab", -1},
	} {
		if got := rt.Lookup(tc.method, tc.target); got != tc.want {
			t.Errorf("Lookup(%s, %q) = %d, want %d", tc.method, tc.target, got, tc.want)
		}
	}
	caps := make([]int, 32)
	for _, tc := range []struct {
		start int
		want  int
	}{{0, 0}, {1, 1}, {2, 2}, {3, 4}, {5, -1}} {
		if got := rt.next(tc.start, "GET", "/abc", caps); got != tc.want {
			t.Errorf("next(%d, GET, /abc) = %d, want %d", tc.start, got, tc.want)
		}
	}
}

// TestRouterManyPrefixes walks more nested prefixes than the index merges
// without allocating.
func TestRouterManyPrefixes(t *testing.T) {
	var ms []string
	for i := 60; i >= 0; i-- {
		ms = append(ms, fmt.Sprintf("GET /%sb", strings.Repeat("a", i)))
		ms = append(ms, fmt.Sprintf("GET /%s(?P<n>[0-9])", strings.Repeat("a", i)))
	}
	rt := newBenchRouter(t, ms)
	for _, target := range []string{"/b", "/ab", "/aaaab", "/" + strings.Repeat("a", 45) + "b", "/" + strings.Repeat("a", 45) + "7", "/" + strings.Repeat("a", 70), "/" + strings.Repeat("a", 70) + "1"} {
		if got, want := rt.Lookup("GET", target), naiveLookup(ms, 0, "GET", target); got != want {
			t.Errorf("Lookup(%q) = %d, want %d", target, got, want)
		}
	}
}

// naiveLookup is the first route from start matching method and target, by
// a linear scan with regexp.
func naiveLookup(ms []string, start int, method, target string) int {
	for i := start; i < len(ms); i++ {
		methods, pattern, _ := strings.Cut(ms[i], " ")
		if !slices.Contains(strings.Split(methods, ","), method) {
			continue
		}
		if regexp.MustCompile(`^(?:` + pattern + `)`).MatchString(target) {
			return i
		}
	}
	return -1
}

var fuzzRoutePatterns = []string{
	"/", "/a", "/ab", "/abc", "/a/", "/a/b", "/(?P<x>.*)", "/a(?P<x>.*)", "/a/(?P<x>[^/]*)",
	"/ab(?:$|\\?)", "/a(?:/|$|\\?)", "(?i)/AB", "/(?:a|b)c", "/a|/b", "()", ".*",
	"/a\\?q=(?P<q>[^&]*)", "/ab?", "/a\\b", "/\\x{FFFD}", "/é", "/é(?P<x>.)",
	"/abc/(?P<id>[0-9]+)(?:/(?P<sub>[a-z]+))?", "/x", "/xy", "/x(y)?z",
}

var fuzzRouteMethods = []string{"GET", "POST", "GET,POST", "PUT,GET"}

// FuzzRouterOrder compares Router.Lookup and Router.next with a linear scan
// by regexp over a random table.
func FuzzRouterOrder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, "GET", "/ab")
	f.Add([]byte{6, 1, 2, 0x13, 4}, "POST", "/abc")
	f.Add([]byte{12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22}, "GET", "/a/b?q=1")
	f.Add([]byte{25, 24, 23, 1, 2, 3, 4, 5}, "GET", "/xyz")
	f.Fuzz(func(t *testing.T, table []byte, method, target string) {
		if len(table) > 64 {
			table = table[:64]
		}
		ms := make([]string, len(table))
		for i, c := range table {
			ms[i] = fuzzRouteMethods[int(c>>6)] + " " + fuzzRoutePatterns[int(c&63)%len(fuzzRoutePatterns)]
		}
		routes := make([]Route, len(ms))
		for i, m := range ms {
			routes[i] = Route{Match: m}
		}
		rt, err := NewRouter(routes)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := rt.Lookup(method, target), naiveLookup(ms, 0, method, target); got != want {
			t.Fatalf("routes %q: Lookup(%s, %q) = %d, want %d", ms, method, target, got, want)
		}
		caps := make([]int, max(rt.maxCaps, 2))
		for start := 1; start <= len(ms); start++ {
			if got, want := rt.next(start, method, target, caps), naiveLookup(ms, start, method, target); got != want {
				t.Fatalf("routes %q: next(%d, %s, %q) = %d, want %d", ms, start, method, target, got, want)
			}
		}
	})
}

package core

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reso-project/reso/internal/race"
)

// The matcher itself (core/internal/match) is tested against package regexp
// there; these tests cover the router's use of it: route order, methods and
// the prefix index over a table.

// TestLookupAllocs checks that a lookup in a table of 200 routes, hit or
// miss, allocates nothing.
func TestLookupAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	rt := newBenchRouter(t, generatedRoutes(200))
	for _, target := range []string{"/api/v1/res000/1/a", "/api/v1/res100/42", "/x/y?debug=1", "/nothing"} {
		if n := testing.AllocsPerRun(100, func() { rt.Lookup("GET", target) }); n != 0 {
			t.Errorf("Lookup(%q): %v allocations", target, n)
		}
	}
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

// TestRouterNotASCII checks routes whose literal prefix is not ASCII, which
// the prefix index once lost (it keyed bytes >= 0x80 as runes).
func TestRouterNotASCII(t *testing.T) {
	ms := []string{"GET /ab", "GET /é", "GET /aé(?P<x>.)", "GET /\\x{e9}x", "GET /\\xff", "GET /"}
	rt := newBenchRouter(t, ms)
	for _, target := range []string{"/é", "/éa", "/aé", "/aéz", "/éx", "/ab", "/x", "/ÿ", "/\xc3"} {
		if got, want := rt.Lookup("GET", target), naiveLookup(ms, 0, "GET", target); got != want {
			t.Errorf("Lookup(%q) = %d, want %d", target, got, want)
		}
	}
	if got := rt.Lookup("GET", "/éa"); got != 1 {
		t.Errorf("Lookup(/éa) = %d, want 1", got)
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
	f.Add([]byte{20, 21}, "GET", "/éa")
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

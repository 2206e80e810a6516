package core

import (
	"fmt"
	"testing"
)

// exampleRoutes is the route table of the example application.
var exampleRoutes = []string{
	"GET,PUT,POST /(?P<type>xml|plain)/(?P<path>.*)",
	"GET,PUT,POST /json/(?P<path>.*)",
	"GET /config\\?directory=(?P<directory>[^&]*)",
	"GET,PUT,POST /config(?:$|\\?)",
	"GET /files(?:/|$|\\?)",
	"GET /file/",
	"GET /users(?:/|$|\\?)",
	"GET /private/",
}

func newBenchRouter(b testing.TB, matches []string) *Router {
	b.Helper()
	routes := make([]Route, len(matches))
	for i, m := range matches {
		routes[i] = Route{Match: m}
	}
	rt, err := NewRouter(routes)
	if err != nil {
		b.Fatal(err)
	}
	return rt
}

// BenchmarkMatchExample looks up a mix of targets in the example
// application's table.
func BenchmarkMatchExample(b *testing.B) {
	rt := newBenchRouter(b, exampleRoutes)
	targets := []struct {
		target string
		want   int
	}{
		{"/config", 3},
		{"/files/sub/dir", 4},
		{"/users/1/name", 6},
		{"/xml/config", 0},
		{"/private/x", 7},
		{"/nothing", -1},
	}
	for _, tc := range targets {
		if got := rt.Lookup("GET", tc.target); got != tc.want {
			b.Fatalf("Lookup(GET, %q) = %d, want %d", tc.target, got, tc.want)
		}
	}
	b.Run("mix", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			tc := targets[i%len(targets)]
			if rt.Lookup("GET", tc.target) != tc.want {
				b.Fatal("wrong route")
			}
		}
	})
	for _, tc := range targets {
		b.Run(tc.target[1:], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rt.Lookup("GET", tc.target)
			}
		})
	}
}

// generatedRoutes returns a table of n routes in the style of a REST API:
// most under /api/v1/, some under other shared prefixes, and catch-alls at
// the end.
func generatedRoutes(n int) []string {
	var ms []string
	for len(ms) < n-4 {
		i := len(ms) // the route's index, in its name
		switch i % 5 {
		case 0, 1, 2:
			ms = append(ms, fmt.Sprintf("GET /api/v1/res%03d/(?P<id>[0-9]+)(?:/(?P<sub>[a-z]+))?", i))
		case 3:
			ms = append(ms, fmt.Sprintf("GET,PUT,POST /api/v2/item%03d(?:/(?P<id>[0-9a-f]{8,}))?(?:$|\\?)", i))
		case 4:
			ms = append(ms, fmt.Sprintf("GET /static/dir%03d/(?P<file>[^/?]+\\.(?:css|js|png))", i))
		}
	}
	return append(ms,
		"GET /api/(?P<version>v[0-9]+)/(?P<rest>.*)",
		"GET /(?P<type>xml|plain)/(?P<path>.*)",
		"GET /(?i:health)(?:$|\\?)",
		"GET,POST /(?P<any>[^?]*)\\?debug=1",
	)
}

// BenchmarkMatch200 looks up targets hitting the first, a middle and the last
// route, a catch-all and nothing in a table of 200 routes.
func BenchmarkMatch200(b *testing.B) {
	ms := generatedRoutes(200)
	rt := newBenchRouter(b, ms)
	cases := []struct {
		name, target string
		want         int
	}{
		{"first", "/api/v1/res000/12345/name", 0},
		{"middle", "/api/v1/res100/42", 100},
		{"last", "/x/y?debug=1", 199},
		{"catchall", "/api/v9/anything", 196},
		{"miss", "/nothing/here", -1},
	}
	for _, c := range cases {
		if got := rt.Lookup("GET", c.target); got != c.want {
			b.Fatalf("Lookup(GET, %q) = %d (%q), want %d", c.target, got, ms[max(got, 0)], c.want)
		}
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rt.Lookup("GET", c.target)
			}
		})
	}
}

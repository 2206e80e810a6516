package www

import (
	"fmt"
	"net/http"
	"regexp/syntax"
	"strings"

	"github.com/reso-project/reso/core"
)

// Clash checks that the site at prefix owns its prefix in the server's
// route table: that no other route answers, or rewrites, a GET of the
// prefix or of a path under it, and that no other GET route's fixed start
// lies under the prefix (a route the site would shadow, or that would
// shadow part of the site). It returns an error naming the first route in
// the way. The site's own route is the one whose Match is [Match](prefix).
func Clash(table []core.Route, prefix string) error {
	own := Match(prefix)
	others := make([]core.Route, 0, len(table))
	skipped := false
	for _, r := range table {
		if r.Match == own && !skipped {
			skipped = true
			continue
		}
		others = append(others, r)
	}
	// A router of the other routes answers which one takes a probe path.
	probeTable := make([]core.Route, len(others))
	for i, r := range others {
		probeTable[i] = core.Route{Match: r.Match, Rewrite: r.Rewrite, Assign: r.Assign, Handler: http.NotFoundHandler()}
	}
	rt, err := core.NewRouter(probeTable)
	if err != nil {
		return fmt.Errorf("www: %w", err)
	}
	for _, probe := range []string{strings.TrimSuffix(prefix, "/"), prefix, prefix + "index.html", prefix + "a/b.js", prefix + "?q"} {
		if probe == "" {
			continue
		}
		if i := rt.Lookup(http.MethodGet, probe); i >= 0 {
			return clashError(prefix, others[i].Match)
		}
	}
	for _, r := range others {
		methods, pattern, _ := strings.Cut(r.Match, " ")
		if !strings.Contains(","+methods+",", ",GET,") && !strings.Contains(","+methods+",", ",HEAD,") {
			continue
		}
		if lit := literalPrefix(pattern); strings.HasPrefix(lit, prefix) {
			return clashError(prefix, r.Match)
		}
	}
	return nil
}

func clashError(prefix, match string) error {
	return fmt.Errorf("www: prefix %s clashes with the route `%s` of another plugin: choose another prefix (see reso -h, -www-prefix)", prefix, match)
}

// literalPrefix returns the text every match of the route pattern starts
// with ("" when it cannot tell).
func literalPrefix(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return ""
	}
	lit, _ := prog.Prefix()
	return lit
}

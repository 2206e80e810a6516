package websocket

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// originPattern is one parsed entry of Options.Origins.
type originPattern struct {
	scheme string // "" matches any
	host   string // lower case, with port when the pattern has one; "*.x" a subdomain of x; "*" any
}

// parseOrigin parses a pattern of Options.Origins.
func parseOrigin(p string) (originPattern, error) {
	var o originPattern
	host := p
	if scheme, rest, ok := strings.Cut(p, "://"); ok {
		o.scheme, host = strings.ToLower(scheme), rest
		if o.scheme == "" {
			return o, fmt.Errorf("websocket: origin pattern %q: empty scheme", p)
		}
	}
	if host == "" || strings.ContainsAny(host, "/?#@ \t") {
		return o, fmt.Errorf("websocket: origin pattern %q: want [scheme://]host[:port]", p)
	}
	if strings.Contains(host[1:], "*") || (host[0] == '*' && host != "*" && !strings.HasPrefix(host, "*.")) {
		return o, fmt.Errorf("websocket: origin pattern %q: only a leading \"*.\" or \"*\" may be a wildcard", p)
	}
	o.host = strings.ToLower(host)
	return o, nil
}

// match reports whether the origin with scheme and host (host[:port],
// lower case) matches the pattern.
func (o originPattern) match(scheme, host string) bool {
	if o.scheme != "" && o.scheme != scheme {
		return false
	}
	switch {
	case o.host == "*":
		return true
	case strings.HasPrefix(o.host, "*."):
		return strings.HasSuffix(host, o.host[1:]) && len(host) > len(o.host)-1
	default:
		return o.host == host
	}
}

// originAllowed reports whether r may open a WebSocket: it has no Origin
// header, or its Origin names the request's own host or matches one of
// the patterns.
func originAllowed(r *http.Request, patterns []originPattern) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if host == strings.ToLower(r.Host) {
		return true
	}
	for _, p := range patterns {
		if p.match(scheme, host) {
			return true
		}
	}
	return false
}

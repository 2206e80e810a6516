package core

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/reso-project/reso/core/internal/match"
)

// Route is one entry of the ordered route table (docs/wire.md#routes).
//
// Match is a method list and a pattern separated by one space, for example
// "GET,PUT,POST /(?P<type>xml|plain)/(?P<path>.*)". The pattern is a Go
// regular expression (RE2 syntax, which accepts (?P<name>...) groups) matched
// at the start of <path>[?<query>], where path is percent-decoded and the
// query is as sent.
//
// Rewrite, when set, is a method list and a template, for example
// "GET,PUT,PUT /config". The request method becomes the method at the same
// position of the rewrite's list (a list of one method applies to all); path
// and query become the substituted template split at the first ?.
//
// Assign holds NAME=template assignments that set request variables.
//
// Templates substitute %(name)s with the text of the named group (empty when
// the group did not take part), %(name)u with that text percent-decoded as a
// query value, and %% with %.
//
// Handler, when set, answers the request: the matched text moves from the
// remaining path to the consumed path and the handler runs. A route without a
// handler only rewrites, and matching continues with the next route.
//
// HEAD: a route whose method list has GET and not HEAD also matches HEAD,
// as GET for the rewrite position, and the request keeps the method HEAD
// (a rewrite of GET to GET or HEAD leaves it HEAD), so the handler answers
// like GET and the writers send no body. A HEAD never changes state: such a
// route whose rewrite turns GET into another method (GET /config?directory=x
// rewritten to PUT) does not match HEAD, which goes on to the next routes. A
// route that lists HEAD itself is matched by HEAD as written.
type Route struct {
	Match   string
	Rewrite string
	Assign  []string
	Handler http.Handler
}

type route struct {
	methods  []string
	mask     uint64 // bit per known method, for a fast check
	m        *match.Matcher
	rwMethod []string
	headIdx  int  // position HEAD takes in methods; -1 when HEAD does not match
	headGet  bool // HEAD matches as GET and stays HEAD through a rewrite
	rwPath   template
	assign   []assignment
	handler  http.Handler
	form     string
}

type assignment struct {
	name string
	tpl  template
}

// Router is an http.Handler that serves an ordered route table.
// Build it with [NewRouter]; it is safe for concurrent use. It reports the
// route that answers to a [RouteRecorder] in the request's context.
type Router struct {
	routes   []route
	notFound []byte
	// forms are the route forms the 404 answer lists, if any.
	forms []string
	// notFoundLen is the Content-Length of the 404 answer.
	notFoundLen string
	index       match.Index
	maxCaps     int
}

// NewRouter builds a router from routes, in order. It rejects an invalid
// route with an error naming the route. When no route answers a request,
// the router answers 404 Not Found with the body "404 Not Found\n";
// [WithRouteList] adds the route forms. A request whose ACCEPT variable
// negotiates text/html (set by a route that matched on the way) gets the
// same as an HTML page ([AppendHTMLError]).
func NewRouter(routes []Route, opts ...RouterOption) (*Router, error) {
	var o routerOptions
	for _, opt := range opts {
		opt(&o)
	}
	rt := &Router{routes: make([]route, 0, len(routes))}
	var forms strings.Builder
	forms.WriteString("404 Not Found\n")
	for i, r := range routes {
		c, err := compileRoute(r)
		if err != nil {
			return nil, fmt.Errorf("core: route %d %q: %w", i, r.Match, err)
		}
		rt.routes = append(rt.routes, c)
		rt.maxCaps = max(rt.maxCaps, c.m.NumCaps())
		if o.routeList {
			rt.forms = append(rt.forms, r.Match)
			forms.WriteString(r.Match)
			forms.WriteByte('\n')
		}
	}
	rt.notFound = []byte(forms.String())
	rt.notFoundLen = strconv.Itoa(len(rt.notFound))
	prefixes := make([]string, len(rt.routes))
	for i := range rt.routes {
		prefixes[i] = rt.routes[i].m.Prefix()
	}
	rt.index = match.NewIndex(prefixes)
	return rt, nil
}

func compileRoute(r Route) (route, error) {
	methods, pattern, ok := strings.Cut(r.Match, " ")
	if !ok || pattern == "" {
		return route{}, fmt.Errorf("want %q", "METHODS PATTERN")
	}
	c := route{handler: r.Handler, form: r.Match}
	var err error
	if c.methods, err = parseMethods(methods); err != nil {
		return route{}, err
	}
	for _, m := range c.methods {
		c.mask |= methodBit(m)
	}
	c.headIdx = slices.Index(c.methods, http.MethodHead)
	if c.m, err = match.Compile(pattern); err != nil {
		return route{}, fmt.Errorf("pattern: %w", err)
	}
	// Group indexes by name; a name may stand for several groups, as in
	// (?P<x>a)|(?P<x>b).
	groups := make(map[string][]int)
	for g, n := range c.m.Names() {
		if n != "" {
			groups[n] = append(groups[n], g)
		}
	}
	if r.Rewrite != "" {
		rm, tpl, ok := strings.Cut(r.Rewrite, " ")
		if !ok || tpl == "" {
			return route{}, fmt.Errorf("rewrite %q: want %q", r.Rewrite, "METHODS TEMPLATE")
		}
		if c.rwMethod, err = parseMethods(rm); err != nil {
			return route{}, fmt.Errorf("rewrite: %w", err)
		}
		if len(c.rwMethod) != 1 && len(c.rwMethod) != len(c.methods) {
			return route{}, fmt.Errorf("rewrite %q: %d methods for %d", r.Rewrite, len(c.rwMethod), len(c.methods))
		}
		if !strings.HasPrefix(tpl, "/") {
			return route{}, fmt.Errorf("rewrite %q: the path must start with /", r.Rewrite)
		}
		if c.rwPath, err = parseTemplate(tpl, groups); err != nil {
			return route{}, fmt.Errorf("rewrite: %w", err)
		}
	}
	if gi := slices.Index(c.methods, http.MethodGet); c.headIdx < 0 && gi >= 0 {
		// HEAD as GET, unless the rewrite turns GET into a method that may
		// change state.
		if rw := c.rewriteMethod(gi); rw == "" || rw == http.MethodGet || rw == http.MethodHead {
			c.headIdx, c.headGet = gi, true
			c.mask |= methodBit(http.MethodHead)
		}
	}
	for _, a := range r.Assign {
		name, tpl, ok := strings.Cut(a, "=")
		if !ok || !validVarName(name) {
			return route{}, fmt.Errorf("assignment %q: want NAME=template", a)
		}
		t, err := parseTemplate(tpl, groups)
		if err != nil {
			return route{}, fmt.Errorf("assignment %q: %w", a, err)
		}
		c.assign = append(c.assign, assignment{name: name, tpl: t})
	}
	return c, nil
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

var knownMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"}

func methodBit(m string) uint64 {
	for i, k := range knownMethods {
		if k == m {
			return 1 << i
		}
	}
	return 1 << 63 // any other method: checked by name
}

func parseMethods(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("empty method list")
	}
	ms := strings.Split(s, ",")
	for _, m := range ms {
		if m == "" {
			return nil, fmt.Errorf("empty method in %q", s)
		}
		for i := 0; i < len(m); i++ {
			if c := m[i]; c < 'A' || c > 'Z' {
				return nil, fmt.Errorf("method %q: want upper-case letters", m)
			}
		}
	}
	return ms, nil
}

// rewriteMethod returns the method the rewrite gives the method at position
// i of the route's list, or "" when the route does not rewrite.
func (c *route) rewriteMethod(i int) string {
	switch len(c.rwMethod) {
	case 0:
		return ""
	case 1:
		return c.rwMethod[0]
	}
	return c.rwMethod[i]
}

// methodIndex returns the position of method in the route's list (for HEAD
// matched as GET, the position of GET), or -1.
func (c *route) methodIndex(method string, bit uint64) int {
	if bit != 1<<63 && c.mask&bit == 0 {
		return -1
	}
	if method == http.MethodHead {
		return c.headIdx
	}
	for i, m := range c.methods {
		if m == method {
			return i
		}
	}
	return -1
}

// ServeHTTP routes r through the table.
//
// The request context (see [FromContext]) is the one r's context carries
// already, if any (a router inside a handler continues the outer router's);
// otherwise the router makes one, valid until the route's handler returns,
// and reuses it for a later request. On a connection accepted by a [Listen]
// listener with [ConnContext], r's own context answers [FromContext] with it;
// elsewhere the handler gets r with a derived context.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	switch v := ctx.Value(requestKey{}).(type) {
	case *Request:
		rt.route(w, r, v, false)
		return
	case *connState:
		// One look at the connection: its current request, or its
		// reqState claimed for r.
		req, x := v.enter(ctx, r)
		if req != nil {
			rt.route(w, r, req, false)
			return
		}
		if x != nil {
			defer v.release(x)
			rt.route(w, r, &x.req, false)
			return
		}
	}
	x := reqStates.Get().(*reqState)
	rt.route(w, r, x.start(r), true)
	// Not reached after a panic: that state is left to the collector.
	x.finish()
	reqStates.Put(x)
}

// route routes r with the request context req; attach derives a request
// whose context carries req for the handler.
func (rt *Router) route(w http.ResponseWriter, r *http.Request, req *Request, attach bool) {
	var capsBuf [32]int
	caps := capsBuf[:]
	if rt.maxCaps > len(caps) {
		caps = make([]int, rt.maxCaps)
	}
	target := joinTarget(req.Path, req.Query)
	for i := 0; i < len(rt.routes); {
		i = rt.next(i, req.Method, target, caps)
		if i < 0 {
			break
		}
		c := &rt.routes[i]
		i++
		matched := target[:caps[1]]
		for g, name := range c.m.Names() {
			if name != "" {
				req.SetVar(name, groupText(target, caps, g))
			}
		}
		if c.rwMethod != nil {
			newTarget, err := c.rwPath.expand(target, caps)
			if err != nil {
				WriteError(w, r, err)
				return
			}
			if !c.headGet || req.Method != http.MethodHead {
				req.Method = c.rewriteMethod(c.methodIndex(req.Method, methodBit(req.Method)))
			}
			req.Path, req.Query, _ = strings.Cut(newTarget, "?")
		}
		for _, a := range c.assign {
			v, err := a.tpl.expand(target, caps)
			if err != nil {
				WriteError(w, r, err)
				return
			}
			req.SetVar(a.name, v)
		}
		if c.handler != nil {
			n := min(len(matched), len(req.Path))
			req.Consumed += req.Path[:n]
			req.Path = req.Path[n:]
			recordRoute(r.Context(), c.form)
			if attach {
				r = r.WithContext(NewContext(r.Context(), req))
			}
			c.handler.ServeHTTP(w, r)
			return
		}
		target = joinTarget(req.Path, req.Query)
	}
	h := w.Header()
	body := rt.notFound
	if Negotiate(req.Accept()) == TypeHTML {
		// The same lines as a page: the status line as its title, the
		// route forms as a list.
		body = AppendHTMLError(nil, "404 Not Found", rt.forms)
		setHTMLHeaders(h)
		h.Set("Content-Length", strconv.Itoa(len(body)))
	} else {
		h.Set("Content-Type", "text/plain")
		h.Set("Content-Length", rt.notFoundLen)
	}
	WriteStatus(w, r, http.StatusNotFound, "Not Found")
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// next returns the index of the first route at or after start whose methods
// hold method and whose pattern matches target, filling caps; -1 when none.
func (rt *Router) next(start int, method, target string, caps []int) int {
	bit := methodBit(method)
	return rt.index.Each(start, target, func(i int) bool {
		c := &rt.routes[i]
		return c.methodIndex(method, bit) >= 0 && c.m.Match(target, caps)
	})
}

// Lookup returns the index of the first route that matches method and
// target (<path>[?<query>]), ignoring rewrites, or -1. It does not allocate
// when the table's patterns have at most 15 groups.
func (rt *Router) Lookup(method, target string) int {
	var capsBuf [32]int
	caps := capsBuf[:]
	if rt.maxCaps > len(caps) {
		caps = make([]int, rt.maxCaps)
	}
	return rt.next(0, method, target, caps)
}

func groupText(s string, caps []int, g int) string {
	if caps[2*g] < 0 {
		return ""
	}
	return s[caps[2*g]:caps[2*g+1]]
}

func joinTarget(path, query string) string {
	if query == "" {
		return path
	}
	return path + "?" + query
}

// newRequest builds the request context of r.
func newRequest(r *http.Request) *Request {
	return &Request{
		Method:        r.Method,
		Path:          r.URL.Path,
		Consumed:      Mount(r),
		Query:         r.URL.RawQuery,
		Header:        r.Header,
		Body:          r.Body,
		ContentLength: contentLengthOf(r),
		Identity:      IdentityFromContext(r.Context()),
	}
}

// Route table templates.

type template []tplPart

// tplPart is literal text, or a substitution of the first of groups that
// took part in the match.
type tplPart struct {
	lit    string
	groups []int // group indexes of a substitution; nil for literal text
	decode bool
}

func parseTemplate(s string, groups map[string][]int) (template, error) {
	var t template
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			lit.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			lit.WriteByte('%')
			i++
			continue
		}
		if i+1 >= len(s) || s[i+1] != '(' {
			return nil, fmt.Errorf("template %q: %% must start %%(name)s, %%(name)u or %%%%", s)
		}
		end := strings.IndexByte(s[i:], ')')
		if end < 0 || i+end+1 >= len(s) || (s[i+end+1] != 's' && s[i+end+1] != 'u') {
			return nil, fmt.Errorf("template %q: unterminated %%(name)s", s)
		}
		name := s[i+2 : i+end]
		idx := groups[name]
		if idx == nil {
			return nil, fmt.Errorf("template %q: no group named %q in the pattern", s, name)
		}
		if lit.Len() > 0 {
			t = append(t, tplPart{lit: lit.String()})
			lit.Reset()
		}
		t = append(t, tplPart{groups: idx, decode: s[i+end+1] == 'u'})
		i += end + 1
	}
	if lit.Len() > 0 {
		t = append(t, tplPart{lit: lit.String()})
	}
	return t, nil
}

// ErrInvalidQuery answers a %(name)u substitution of badly encoded text.
var ErrInvalidQuery = Status(http.StatusBadRequest, "Invalid Query")

func (t template) expand(s string, caps []int) (string, error) {
	if len(t) == 1 && t[0].groups == nil {
		return t[0].lit, nil
	}
	var b strings.Builder
	for _, p := range t {
		if p.groups == nil {
			b.WriteString(p.lit)
			continue
		}
		v := ""
		for _, g := range p.groups {
			if caps[2*g] >= 0 {
				v = s[caps[2*g]:caps[2*g+1]]
				break
			}
		}
		if p.decode {
			d, err := url.QueryUnescape(v)
			if err != nil {
				return "", ErrInvalidQuery
			}
			v = d
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

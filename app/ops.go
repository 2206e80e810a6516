package app

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/pluginrpc"
	"github.com/reso-project/reso/plugins"
)

// ops is what the server tells operators: liveness and readiness
// (GET /healthz, /readyz, on the server's address and on -admin-addr) and
// the metrics of -admin-addr. The parts of the server register with it as
// they start.
type ops struct {
	shutting atomic.Bool // set when shutdown begins: readiness fails first

	mu      sync.Mutex
	checks  []readyCheck
	plugins []*pluginrpc.Client

	metrics *metrics               // nil without -admin-addr
	node    atomic.Pointer[string] // the node's id in a fleet, shown by /readyz
}

// readyCheck is one condition of readiness.
type readyCheck struct {
	name string
	fn   func(ctx context.Context) error
}

// readyTimeout bounds the checks of one /readyz.
const readyTimeout = 2 * time.Second

// addCheck adds a readiness condition.
func (o *ops) addCheck(name string, fn func(ctx context.Context) error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.checks = append(o.checks, readyCheck{name, fn})
}

// addPlugins keeps the isolated plugins of entries: readiness wants their
// processes up, and the metrics count their restarts.
func (o *ops) addPlugins(entries []pluginhost.Entry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range entries {
		if c := pluginClient(e.Plugin); c != nil {
			o.plugins = append(o.plugins, c)
		}
	}
}

// pluginClient returns the process client behind p, nil for a plugin
// compiled in.
func pluginClient(p plugins.Plugin) *pluginrpc.Client {
	switch p := p.(type) {
	case *pluginrpc.Client:
		return p
	case optionalPlugin:
		return pluginClient(p.p)
	}
	return nil
}

// notReady returns what keeps the server from being ready, one line each;
// none when it is ready.
func (o *ops) notReady(ctx context.Context) []string {
	var out []string
	if o.shutting.Load() {
		out = append(out, "shutting down")
	}
	o.mu.Lock()
	checks, clients := slices.Clone(o.checks), slices.Clone(o.plugins)
	o.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for _, c := range checks {
		if err := c.fn(ctx); err != nil {
			out = append(out, c.name+": "+oneLine(err.Error()))
		}
	}
	for _, c := range clients {
		if !c.Running() {
			out = append(out, "plugin "+c.Name()+": process not running")
		}
	}
	return out
}

// oneLine keeps the first line of s.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// healthz answers liveness: 200 while the process serves.
func (o *ops) healthz(w http.ResponseWriter, r *http.Request) {
	plain(w, r, http.StatusOK, "ok\n")
}

// readyz answers readiness: 200 "ready", or 503 with what is not ready.
func (o *ops) readyz(w http.ResponseWriter, r *http.Request) {
	var node string
	if id := o.node.Load(); id != nil {
		node = "node " + *id + "\n"
	}
	if bad := o.notReady(r.Context()); len(bad) > 0 {
		plain(w, r, http.StatusServiceUnavailable, strings.Join(bad, "\n")+"\n"+node)
		return
	}
	plain(w, r, http.StatusOK, "ready\n"+node)
}

// plain writes a short text/plain answer, no body for HEAD.
func plain(w http.ResponseWriter, r *http.Request, code int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(body))
	}
}

// wrap answers GET and HEAD of /healthz and /readyz before h, on the
// server's own address: they are not routes of the table.
func (o *ops) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			switch r.URL.Path {
			case "/healthz":
				o.healthz(w, r)
				return
			case "/readyz":
				o.readyz(w, r)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

package call

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// Settings of the plugin (plugins.Settings), set by the host from its
// flags; empty means the default.
const (
	// SettingMaxExpires is the longest lifetime a contact, call or
	// participant may ask for, a Go duration (default [DefaultMaxExpires]).
	SettingMaxExpires = "call-max-expires"
	// SettingWait is how long an invitation no session has taken waits, a
	// Go duration (default [DefaultWait]).
	SettingWait = "call-wait"
	// SettingWaitCount is how many invitations may wait for one user, a
	// positive integer (default [DefaultWaitCount]).
	SettingWaitCount = "call-wait-count"
	// SettingWaitBytes is how many bytes of invitations may wait for one
	// user, a positive integer (default [DefaultWaitBytes]).
	SettingWaitBytes = "call-wait-bytes"
)

// Defaults of the plugin's settings and lifetimes.
const (
	DefaultMaxExpires = 24 * time.Hour
	DefaultWait       = 30 * time.Second
	DefaultWaitCount  = 64
	DefaultWaitBytes  = 1 << 20
	// DefaultExpires is the lifetime of a contact, call or participant
	// that asks for none.
	DefaultExpires = time.Hour
)

// Plugin is the call-control plugin. Its zero value is ready: it reads
// its settings from the host. Use it by pointer: Close stops what Routes
// started.
type Plugin struct {
	mu      sync.Mutex
	waiting []*waiting // of every Routes call
	relays  []*relay   // of every Routes call
}

// handler serves the plugin's routes.
type handler struct {
	st         store
	maxExpires time.Duration
	waiting    *waiting
	relay      *relay
}

// Routes returns the routes of /login/, /call and /user, all requiring
// an identity. It gives the tree's top-level paths /login, /call and
// /user their rules.
func (p *Plugin) Routes(ctx context.Context, host plugins.Services) ([]plugins.Route, error) {
	t := host.Tree
	if t == nil {
		return nil, errors.New("call: the host offers no tree")
	}
	h := &handler{st: store{t}, maxExpires: DefaultMaxExpires}
	wait, count, size := DefaultWait, DefaultWaitCount, DefaultWaitBytes
	if s := host.Settings; s != nil {
		var err error
		if h.maxExpires, err = duration(ctx, s, SettingMaxExpires, DefaultMaxExpires); err != nil {
			return nil, err
		}
		if wait, err = duration(ctx, s, SettingWait, DefaultWait); err != nil {
			return nil, err
		}
		if count, err = positive(ctx, s, SettingWaitCount, DefaultWaitCount); err != nil {
			return nil, err
		}
		if size, err = positive(ctx, s, SettingWaitBytes, DefaultWaitBytes); err != nil {
			return nil, err
		}
	}
	if err := h.setup(ctx); err != nil {
		return nil, err
	}
	h.waiting = newWaiting(h.st, wait, count, size)
	h.waiting.slots = &slots{st: h.st, wait: wait, maxCount: count, maxBytes: size}
	h.relay = newRelay(h.st, h.waiting)
	p.mu.Lock()
	p.waiting = append(p.waiting, h.waiting)
	p.relays = append(p.relays, h.relay)
	p.mu.Unlock()
	return []plugins.Route{
		{Match: `GET,PUT,POST,DELETE,SEND,CANCEL /login/`, Identity: plugins.IdentityRequired, Handler: core.HandlerFunc(h.login)},
		{Match: `GET,PUT,POST,DELETE /call(?:/|$|\?)`, Identity: plugins.IdentityRequired, Handler: core.HandlerFunc(h.call)},
		{Match: `GET,PUT,POST,DELETE /user(?:/|$|\?)`, Identity: plugins.IdentityRequired, Handler: core.HandlerFunc(h.user)},
	}, nil
}

// duration reads the setting name as a Go duration; "" is def.
func duration(ctx context.Context, s plugins.Settings, name string, def time.Duration) (time.Duration, error) {
	v, err := s.Setting(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("call: setting %s: %w", name, err)
	}
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("call: setting %s: %q is not a positive duration", name, v)
	}
	return d, nil
}

// positive reads the setting name as a positive integer; "" is def.
func positive(ctx context.Context, s plugins.Settings, name string, def int) (int, error) {
	v, err := s.Setting(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("call: setting %s: %w", name, err)
	}
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("call: setting %s: %q is not a positive integer", name, v)
	}
	return n, nil
}

// Close stops the retry of the invitations waiting and their relays
// (plugins.Closer): those still waiting are dropped.
func (p *Plugin) Close(ctx context.Context) error {
	p.mu.Lock()
	ws, rs := p.waiting, p.relays
	p.waiting, p.relays = nil, nil
	p.mu.Unlock()
	var errs []error
	for _, r := range rs {
		if err := r.close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, w := range ws {
		if err := w.close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// topRules are the rules the plugin gives its top-level paths
// (docs/call.md): logins to their users alone, calls readable and
// followable by every authenticated caller, user records readable by them,
// the relays (relay.go) and the slots (slots.go) to the plugin alone.
var topRules = []struct{ path, rule string }{
	{"/login", "self:cruds"},
	{"/call", "self:cruds auth:rs"},
	{"/user", "self:cruds auth:r"},
	{relayTop, "self:cruds"},
	{waitTop, "self:cruds"},
}

// setup creates the top-level resources, persistent, and sets their rules.
func (h *handler) setup(ctx context.Context) error {
	deadline := time.Now().Add(setupPatience)
	for {
		err := h.setupOnce(ctx)
		if err == nil || !errors.Is(err, errTree) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// setupPatience bounds how long setup tries again while the tree answers
// unavailable: a node of a fleet whose log is not yet applying (its
// consumer settling at start, NATS electing a leader) is not a reason to
// exit.
const setupPatience = 30 * time.Second

// setupOnce makes the top-level resources and their rules once.
func (h *handler) setupOnce(ctx context.Context) error {
	for _, top := range topRules {
		e, err := h.st.record(ctx, top.path)
		if err != nil {
			return fmt.Errorf("call: %s: %w", top.path, err)
		}
		if e == nil {
			if _, err := h.st.must(ctx, "", msg{Method: "PUT", Resource: top.path, Entity: []byte("{}"), Persistent: true}); err != nil {
				return fmt.Errorf("call: %s: %w", top.path, err)
			}
		}
		rule := top.rule
		if _, err := h.st.must(ctx, "", msg{Method: "RULES", Resource: top.path, Rules: &rule}); err != nil {
			return fmt.Errorf("call: rules of %s: %w", top.path, err)
		}
	}
	return nil
}

// Errors of the plugin's own checks (docs/call.md).
var (
	errForbidden     = core.Status(http.StatusForbidden, "Forbidden")
	errMethod        = core.ErrMethodNotAllowed
	errNotFound      = core.ErrNotFound
	errNotLoggedIn   = core.Status(http.StatusNotFound, "Not Logged In")
	errDelivered     = core.Status(http.StatusConflict, "Already Delivered")
	errCommand       = core.Status(http.StatusBadRequest, "Invalid Command")
	errExpires       = core.Status(http.StatusBadRequest, "Invalid Expires")
	errTooManyWait   = core.Status(http.StatusServiceUnavailable, "Too Many Waiting Messages")
	errWaitTooLarge  = core.Status(http.StatusServiceUnavailable, "Waiting Messages Too Large")
	errMissingFields = map[string]core.StatusError{
		"contact": core.Status(http.StatusBadRequest, "Missing Contact"),
		"session": core.Status(http.StatusBadRequest, "Missing Session"),
		"email":   core.Status(http.StatusBadRequest, "Missing Email"),
		"url":     core.Status(http.StatusBadRequest, "Missing Url"),
	}
)

// segments splits the path after a route's prefix into its
// percent-decoded segments; "" gives none. An empty segment (a doubled or
// trailing slash) answers 404.
func segments(p string) ([]string, error) {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil, nil
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "?#[]%") {
			return nil, errNotFound
		}
	}
	return segs, nil
}

// caller returns the e-mail of the request's caller and whether it is the
// administrator.
func caller(req *core.Request) (email string, admin bool) {
	if req.Identity == nil {
		return "", false
	}
	return req.Identity.Email, req.Identity.Email == plugins.Admin
}

var (
	_ plugins.Plugin = (*Plugin)(nil)
	_ plugins.Closer = (*Plugin)(nil)
)

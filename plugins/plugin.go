// Package plugins holds the contract between reso and its resources: a
// plugin, its routes, and the services the host offers it. The host that
// turns an ordered list of plugins into the router's route table is package
// pluginhost.
//
// A plugin contributes an ordered list of routes. The contract is small and
// transport-neutral (no http.ResponseWriter in it), so the same plugin code
// runs compiled in or in a child process (see package pluginrpc). Plugins
// share no memory: state that several plugins need, such as the configured
// directory, lives in services the [Services] offers every plugin.
package plugins

import (
	"context"
	"fmt"

	"github.com/reso-project/reso/core"
)

// Plugin contributes routes to the route table. Routes is called once, when
// the table is built; host stays valid for the life of the plugin.
type Plugin interface {
	Routes(ctx context.Context, host Services) ([]Route, error)
}

// Route is one route of a plugin, in the form of [core.Route] with a
// transport-neutral handler.
type Route struct {
	// Match is "METHODS PATTERN", see core.Route.
	Match string
	// Rewrite is "METHODS TEMPLATE", or "" for none.
	Rewrite string
	// Assign holds NAME=template assignments.
	Assign []string
	// Identity says whether the host authenticates the caller before
	// Handler runs (see [IdentityMode]); the handler finds the caller in
	// core.Request.Identity. The zero value asks for none. The plugin itself
	// never sees a credential checked.
	Identity IdentityMode
	// Handler answers the route; nil makes a rewrite-only route.
	Handler core.Handler
	// Session, when set instead of Handler, makes a session route: the
	// host's session transport (see [Host].Sessions) turns the request
	// into a message session and Session serves it.
	Session core.SessionHandler
}

// IdentityMode says whether a route asks the host for the caller's
// identity.
type IdentityMode uint8

// Identity modes of a [Route].
const (
	// IdentityNone runs the handler without a check; core.Request.Identity
	// is nil.
	IdentityNone IdentityMode = iota
	// IdentityOptional runs the handler for anonymous callers (no
	// credentials sent; Identity nil, no challenge, no cookie) and known
	// ones (Identity set; a password login gets its session cookies). Wrong
	// credentials are answered as on a required route (401), never served
	// as anonymous.
	IdentityOptional
	// IdentityRequired runs the handler only for an authenticated caller;
	// the host answers every other request (401, 429, ...).
	IdentityRequired
)

// String returns "none", "optional" or "required".
func (m IdentityMode) String() string {
	switch m {
	case IdentityNone:
		return "none"
	case IdentityOptional:
		return "optional"
	case IdentityRequired:
		return "required"
	}
	return fmt.Sprintf("IdentityMode(%d)", uint8(m))
}

// Services is what the server offers every plugin. Each service is a small
// capability interface that a plugin finds by type assertion, such as
// [Settings]:
//
//	settings, ok := host.(plugins.Settings)
//
// so a new service never changes this interface or the plugins that do not
// use it. Out of process, the plugin's host offers exactly the services the
// server's host offers, so the assertion gives the same answer.
type Services interface{}

// Settings is the host service of shared settings.
type Settings interface {
	// Setting returns the value of a shared setting ("" when unset).
	Setting(ctx context.Context, name string) (string, error)
	// SetSetting changes a shared setting.
	SetSetting(ctx context.Context, name, value string) error
}

// Closer is the optional capability of a plugin that holds something to
// release (files, connections, goroutines): the host calls Close once at
// shutdown, after the server stopped taking requests, in reverse plugin
// order; ctx bounds the time it has. An isolated plugin's Close runs in its
// process before the host stops it.
type Closer interface {
	Close(ctx context.Context) error
}

// Shutdowner is implemented by a plugin that stands for a plugin elsewhere,
// such as a pluginrpc client, whose own Close ends a process: the host
// calls Shutdown where it would call [Closer].Close, and Shutdown passes it
// on.
type Shutdowner interface {
	Shutdown(ctx context.Context) error
}

// PluginFunc adapts a function to [Plugin].
type PluginFunc func(ctx context.Context, host Services) ([]Route, error)

// Routes calls f(ctx, host).
func (f PluginFunc) Routes(ctx context.Context, host Services) ([]Route, error) { return f(ctx, host) }

var _ Plugin = PluginFunc(nil)

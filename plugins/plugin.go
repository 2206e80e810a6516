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
// the table is built; the services of host stay valid for the life of the
// plugin.
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
	// host's session transport (a WebSocket in reso) turns the request
	// into a message session and Session serves it.
	Session core.SessionHandler
}

// IdentityMode says whether a route asks the host for the caller's
// identity.
type IdentityMode uint8

// Identity modes of a [Route].
const (
	// IdentityNone runs the handler without a check of the host's;
	// core.Request.Identity is nil unless the server's own middleware, in
	// front of the route table, named a caller.
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

// Services is what the host offers every plugin: one field per service, nil
// when the host does not offer it. A plugin takes the services it needs
// when Routes is called and checks they are there:
//
//	if host.Settings == nil {
//		return nil, errors.New("greeter: the host offers no settings")
//	}
//
// A new service is one more field, which plugins that do not use it never
// see. Out of process, the plugin's Services offers exactly the services
// the server's host offers, each reached over the plugin's connection.
type Services struct {
	// Settings are the shared settings (see SettingDirectory).
	Settings Settings
	// Tree is the resource tree of the channel convention (see [Tree]).
	Tree Tree
}

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

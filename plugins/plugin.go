// Package plugins holds the contract between reso and its resources, and the
// host that turns an ordered list of plugins into the router's route table.
//
// A plugin contributes an ordered list of routes. The contract is small and
// transport-neutral (no http.ResponseWriter in it), so the same plugin code
// runs compiled in or in a child process (see package pluginrpc). Plugins
// share no memory: state that several plugins need, such as the configured
// directory, lives in services the [Host] offers every plugin.
package plugins

import (
	"context"
	"fmt"

	"github.com/reso-project/reso/core"
)

// Plugin contributes routes to the route table. Routes is called once, when
// the table is built; host stays valid for the life of the plugin.
type Plugin interface {
	Routes(ctx context.Context, host Host) ([]Route, error)
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

// Host is what the server offers every plugin.
type Host interface {
	// Setting returns the value of a shared setting ("" when unset).
	Setting(ctx context.Context, name string) (string, error)
	// SetSetting changes a shared setting.
	SetSetting(ctx context.Context, name, value string) error
}

// PluginFunc adapts a function to [Plugin].
type PluginFunc func(ctx context.Context, host Host) ([]Route, error)

// Routes calls f(ctx, host).
func (f PluginFunc) Routes(ctx context.Context, host Host) ([]Route, error) { return f(ctx, host) }

var _ Plugin = PluginFunc(nil)

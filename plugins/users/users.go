// Package users is the user collection of the example application
// (docs/wire.md#users): a list of user records bound read-only at /users.
package users

import (
	"context"
	"fmt"
	"os"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// Example returns the example list: two records, the first with username,
// name and email, the second with username only.
func Example() core.List {
	return core.List{
		core.Record{
			{Name: "username", Value: "alice"},
			{Name: "name", Value: "Alice Example"},
			{Name: "email", Value: "alice@example.org"},
		},
		core.Record{
			{Name: "username", Value: "bob"},
		},
	}
}

// Plugin binds a list of users at /users. Users nil means [Example].
type Plugin struct {
	Users core.List
}

// Routes returns route 7 (the bound user collection) of the example
// application (docs/wire.md#example-routes).
func (p Plugin) Routes(context.Context, plugins.Services) ([]plugins.Route, error) {
	list := p.Users
	if list == nil {
		list = Example()
	}
	return []plugins.Route{{Match: `GET /users(?:/|$|\?)`, Handler: core.Bind(list)}}, nil
}

// Load reads a JSON list of user records from a file, keeping field order.
// Every record must be an object with a string username.
func Load(path string) (core.List, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	return Parse(b)
}

// Parse decodes a JSON list of user records with [core.DecodeJSON], so field
// order is kept and a repeated name keeps its first position with its last
// value. Every record must be an object with a string username.
func Parse(b []byte) (core.List, error) {
	v, err := core.DecodeJSON(b)
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	list, ok := v.(core.List)
	if !ok {
		return nil, fmt.Errorf("users: want a JSON list of records")
	}
	for i, u := range list {
		rec, ok := u.(core.Record)
		if !ok {
			return nil, fmt.Errorf("users: record %d is not an object", i)
		}
		if name, ok := rec.Get("username"); !ok {
			return nil, fmt.Errorf("users: record %d has no username", i)
		} else if _, ok := name.(string); !ok {
			return nil, fmt.Errorf("users: record %d: username is not a string", i)
		}
	}
	return list, nil
}

var _ plugins.Plugin = Plugin{}

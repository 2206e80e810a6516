// Package config is the configuration resource of the example application
// (docs/wire.md#configuration): GET /config shows the directory that file
// requests are served from; GET /config?directory=<value>, PUT and POST
// /config change it.
package config

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

// ErrInvalidDirectory answers a body that is not a text or JSON string, or empty.
var ErrInvalidDirectory = core.Status(http.StatusBadRequest, "Invalid Directory")

// Plugin is the config plugin. Its zero value is ready.
type Plugin struct{}

// Routes returns routes 3 (GET /config?directory=) and 4 (/config) of the
// example application (docs/wire.md#example-routes).
func (Plugin) Routes(_ context.Context, host plugins.Services) ([]plugins.Route, error) {
	settings := host.Settings
	if settings == nil {
		return nil, errors.New("config: the host offers no settings")
	}
	h := core.Resource(&resource{host: settings})
	return []plugins.Route{
		{
			Match:   `GET /config\?directory=(?P<directory>[^&]*)`,
			Rewrite: "PUT /config",
			Assign:  []string{"CONTENT_TYPE=text/plain", "BODY=%(directory)u"},
			Handler: h,
		},
		{
			Match:   `GET,PUT,POST /config(?:$|\?)`,
			Rewrite: "GET,PUT,PUT /config",
			Handler: h,
		},
	}, nil
}

type resource struct {
	host plugins.Settings
	last atomic.Pointer[shown] // the value of the last directory shown
}

// shown is the answer of GET for one directory; it is never changed.
type shown struct {
	dir   string
	value any
}

// Get answers the node config with its field directory.
func (rs *resource) Get(ctx context.Context, _ *core.Request) (any, error) {
	dir, err := rs.host.Setting(ctx, plugins.SettingDirectory)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if dir == "" {
		dir = "."
	}
	if s := rs.last.Load(); s != nil && s.dir == dir {
		return s.value, nil
	}
	s := &shown{dir: dir, value: core.Node{Name: "config", Content: core.Record{{Name: "directory", Value: dir}}}}
	rs.last.Store(s)
	return s.value, nil
}

// Put sets the directory to the body: text, or a JSON string.
func (rs *resource) Put(ctx context.Context, req *core.Request) (any, error) {
	var dir string
	switch v := req.Entity.(type) {
	case string:
		dir = v
	case int64, float64, bool, nil, core.List, core.Record:
		return nil, ErrInvalidDirectory
	}
	if dir == "" || !validDirectory(dir) {
		return nil, ErrInvalidDirectory
	}
	if err := rs.host.SetSetting(ctx, plugins.SettingDirectory, dir); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return nil, nil
}

func validDirectory(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return false
		}
	}
	return true
}

var (
	_ plugins.Plugin = Plugin{}
	_ core.Getter    = (*resource)(nil)
	_ core.Putter    = (*resource)(nil)
)

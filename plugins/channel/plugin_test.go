package channel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reso-project/reso/doors"
	"github.com/reso-project/reso/internal/treetest"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/plugins/channel"
)

// TestRoutes checks the plugin's routes and how it reads the largest
// message of a session: its own field first, then the host's setting,
// else the default; a host without a tree or with a bad setting is refused.
func TestRoutes(t *testing.T) {
	tree := treetest.New()
	for _, tc := range []struct {
		name    string
		plugin  *channel.Plugin
		host    plugins.Services
		prefix  string
		max     int
		wantErr string
	}{
		{name: "defaults", plugin: channel.New(), host: plugins.Services{Tree: tree}, prefix: "/channel", max: doors.DefaultMaxMessage},
		{name: "prefix", plugin: &channel.Plugin{Prefix: "/rt/ch/"}, host: plugins.Services{Tree: tree}, prefix: "/rt/ch", max: doors.DefaultMaxMessage},
		{name: "setting", plugin: channel.New(), host: plugins.Services{Tree: tree, Settings: pluginhost.NewSettings(map[string]string{channel.SettingMaxMessage: "100"})}, prefix: "/channel", max: 100},
		{name: "own over setting", plugin: &channel.Plugin{MaxMessage: 7}, host: plugins.Services{Tree: tree, Settings: pluginhost.NewSettings(map[string]string{channel.SettingMaxMessage: "100"})}, prefix: "/channel", max: 7},
		{name: "bad setting", plugin: channel.New(), host: plugins.Services{Tree: tree, Settings: pluginhost.NewSettings(map[string]string{channel.SettingMaxMessage: "-1"})}, wantErr: "not a positive number"},
		{name: "no tree", plugin: channel.New(), host: plugins.Services{}, wantErr: "no tree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			routes, err := tc.plugin.Routes(context.Background(), tc.host)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Routes: error %v, want one that says %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(routes) != 2 {
				t.Fatalf("%d routes, want 2", len(routes))
			}
			s, ok := routes[0].Session.(*doors.Session)
			if !ok || s.MaxMessage != tc.max || routes[0].Match != `GET `+tc.prefix+`(?:$|\?)` {
				t.Errorf("session route %q %#v, want GET %s with MaxMessage %d", routes[0].Match, routes[0].Session, tc.prefix, tc.max)
			}
			if _, ok := routes[1].Handler.(*doors.Door); !ok || routes[1].Match != `GET,PUT,POST,DELETE `+tc.prefix+`/` {
				t.Errorf("HTTP route %q %#v, want the door under %s/", routes[1].Match, routes[1].Handler, tc.prefix)
			}
			for _, r := range routes {
				if r.Identity != plugins.IdentityOptional {
					t.Errorf("route %q: identity %v, want optional", r.Match, r.Identity)
				}
			}
		})
	}
}

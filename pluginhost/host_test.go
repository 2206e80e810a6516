package pluginhost

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins"
)

func echoPlugin(mode plugins.IdentityMode) plugins.Plugin {
	return plugins.PluginFunc(func(ctx context.Context, host plugins.Services) ([]plugins.Route, error) {
		return []plugins.Route{
			{Match: "GET /r/(?P<x>.*)", Rewrite: "GET /e/%(x)s"},
			{Match: "GET,PUT /e/", Identity: mode, Handler: core.HandlerFunc(func(ctx context.Context, req *core.Request) (*core.Response, error) {
				body, err := core.ReadBody(req.Body)
				if err != nil {
					return nil, err
				}
				who := "-"
				if req.Identity != nil {
					who = req.Identity.Email
				}
				return &core.Response{Body: []byte(req.Method + " " + req.Path + " " + who + " " + string(body))}, nil
			})},
		}, nil
	})
}

func serve(t *testing.T, m *Host, entries ...Entry) *core.Router {
	t.Helper()
	table, err := m.Routes(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRouter(table, core.WithRouteList())
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func call(rt http.Handler, method, target, body string) (int, string) {
	w := httptest.NewRecorder()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	rt.ServeHTTP(w, httptest.NewRequest(method, target, r))
	return w.Code, w.Body.String()
}

func TestMountOrderRewriteAndBodyLimit(t *testing.T) {
	rt := serve(t, &Host{Services: plugins.Services{Settings: &SettingsMap{}}, BodyLimit: 4}, Entry{Name: "echo", Plugin: echoPlugin(plugins.IdentityNone)})
	cases := []struct {
		method, target, body string
		code                 int
		want                 string
	}{
		{"GET", "/r/a/b", "", 200, "GET a/b - "},
		{"PUT", "/e/x", "abcd", 200, "PUT x - abcd"},
		{"PUT", "/e/x", "abcde", 413, "413 Request Entity Too Large\n"},
		{"GET", "/nothing", "", 404, "404 Not Found\nGET /r/(?P<x>.*)\nGET,PUT /e/\n"},
	}
	for _, c := range cases {
		if code, body := call(rt, c.method, c.target, c.body); code != c.code || body != c.want {
			t.Errorf("%s %s: %d %q, want %d %q", c.method, c.target, code, body, c.code, c.want)
		}
	}
}

// xUser is authentication middleware for the tests: the X-User header is
// the caller; without it, required answers 401 and optional passes.
func xUser(required bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u := r.Header.Get("X-User")
			if u == "" {
				if required {
					core.WriteError(w, r, core.Status(401, "Unauthorized"))
					return
				}
				next.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r.WithContext(core.NewIdentityContext(r.Context(), &core.Identity{ID: 7, Email: u})))
		})
	}
}

func TestMountIdentity(t *testing.T) {
	for _, mode := range []plugins.IdentityMode{plugins.IdentityOptional, plugins.IdentityRequired, plugins.IdentityMode(9)} {
		_, err := (&Host{Services: plugins.Services{Settings: &SettingsMap{}}}).Routes(context.Background(), []Entry{{Name: "p", Plugin: echoPlugin(mode)}})
		if err == nil || !strings.Contains(err.Error(), "p: route") {
			t.Errorf("a route with identity %s without an authenticator: %v", mode, err)
		}
	}
	m := &Host{Services: plugins.Services{Settings: &SettingsMap{}}, Require: xUser(true), Optional: xUser(false)}
	if _, err := m.Routes(context.Background(), []Entry{{Name: "p", Plugin: echoPlugin(plugins.IdentityMode(9))}}); err == nil {
		t.Error("an unknown identity mode was mounted")
	}
	cases := []struct {
		mode plugins.IdentityMode
		user string
		code int
		body string
	}{
		{plugins.IdentityRequired, "", 401, "401 Unauthorized\n"},
		{plugins.IdentityRequired, "ann@example.org", 200, "GET y ann@example.org "},
		{plugins.IdentityOptional, "", 200, "GET y - "},
		{plugins.IdentityOptional, "ann@example.org", 200, "GET y ann@example.org "},
		// A route without identity runs no check of its own, but the
		// caller that an outer middleware put in the context is the
		// request's: the identity has one home.
		{plugins.IdentityNone, "ann@example.org", 200, "GET y ann@example.org "},
	}
	for _, c := range cases {
		rt := serve(t, m, Entry{Name: "p", Plugin: echoPlugin(c.mode)})
		if c.mode == plugins.IdentityNone {
			rt2 := xUser(false)(rt)
			w := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/r/y", nil)
			r.Header.Set("X-User", c.user)
			rt2.ServeHTTP(w, r)
			if w.Code != c.code || w.Body.String() != c.body {
				t.Errorf("%s %q: %d %q", c.mode, c.user, w.Code, w.Body.String())
			}
			continue
		}
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/r/y", nil)
		if c.user != "" {
			r.Header.Set("X-User", c.user)
		}
		rt.ServeHTTP(w, r)
		if w.Code != c.code || w.Body.String() != c.body {
			t.Errorf("%s %q: %d %q, want %d %q", c.mode, c.user, w.Code, w.Body.String(), c.code, c.body)
		}
	}
}

func TestMountPluginError(t *testing.T) {
	bad := plugins.PluginFunc(func(context.Context, plugins.Services) ([]plugins.Route, error) {
		return nil, errors.New("no routes today")
	})
	_, err := (&Host{Services: plugins.Services{Settings: &SettingsMap{}}}).Routes(context.Background(), []Entry{{Name: "bad", Plugin: bad}})
	if err == nil || !strings.Contains(err.Error(), "bad: no routes today") {
		t.Fatalf("%v", err)
	}
}

func TestSettingsReadOnly(t *testing.T) {
	s := NewSettings(map[string]string{plugins.SettingHidden: "/state/reso.db", "directory": "."}, plugins.SettingHidden)
	if err := s.SetSetting(t.Context(), plugins.SettingHidden, ""); err == nil {
		t.Error("a read-only setting was changed")
	}
	if v, _ := s.Setting(t.Context(), plugins.SettingHidden); v != "/state/reso.db" {
		t.Errorf("hidden = %q", v)
	}
	if err := s.SetSetting(t.Context(), "directory", "/tmp"); err != nil {
		t.Errorf("a writable setting: %v", err)
	}
}

func TestMountDefaultBodyLimit(t *testing.T) {
	big := strings.Repeat("x", DefaultBodyLimit+1)
	for _, c := range []struct {
		name  string
		limit int64
		code  int
	}{
		{"zero is the default", 0, 413},
		{"negative is none", -1, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := serve(t, &Host{Services: plugins.Services{Settings: &SettingsMap{}}, BodyLimit: c.limit}, Entry{Name: "echo", Plugin: echoPlugin(plugins.IdentityNone)})
			if code, _ := call(rt, "PUT", "/e/x", big); code != c.code {
				t.Errorf("PUT of %d bytes: %d, want %d", len(big), code, c.code)
			}
			if code, _ := call(rt, "PUT", "/e/x", big[:DefaultBodyLimit]); code != 200 {
				t.Errorf("PUT of %d bytes: %d", DefaultBodyLimit, code)
			}
		})
	}
}

package plugins

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reso-project/reso/core"
)

func echoPlugin(auth bool) Plugin {
	return PluginFunc(func(ctx context.Context, host Host) ([]Route, error) {
		return []Route{
			{Match: "GET /r/(?P<x>.*)", Rewrite: "GET /e/%(x)s"},
			{Match: "GET,PUT /e/", Auth: auth, Handler: core.HandlerFunc(func(ctx context.Context, req *core.Request) (*core.Response, error) {
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

func serve(t *testing.T, m *Mount, entries ...Entry) *core.Router {
	t.Helper()
	table, err := m.Routes(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := core.NewRouter(table)
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
	rt := serve(t, &Mount{Host: &SettingsMap{}, BodyLimit: 4}, Entry{Name: "echo", Plugin: echoPlugin(false)})
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

func TestMountAuth(t *testing.T) {
	if _, err := (&Mount{Host: &SettingsMap{}}).Routes(context.Background(), []Entry{{Name: "p", Plugin: echoPlugin(true)}}); err == nil ||
		!strings.Contains(err.Error(), "p: route") {
		t.Fatalf("an Auth route without an authenticator: %v", err)
	}
	type key struct{}
	m := &Mount{
		Host: &SettingsMap{},
		Require: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-User") == "" {
					core.WriteError(w, r, core.Status(401, "Unauthorized"))
					return
				}
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), key{}, r.Header.Get("X-User"))))
			})
		},
		Identity: func(ctx context.Context) *core.Identity {
			email, _ := ctx.Value(key{}).(string)
			return &core.Identity{ID: 7, Email: email}
		},
	}
	rt := serve(t, m, Entry{Name: "p", Plugin: echoPlugin(true)})
	if code, body := call(rt, "GET", "/e/x", ""); code != 401 || body != "401 Unauthorized\n" {
		t.Errorf("no identity: %d %q", code, body)
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/r/y", nil)
	r.Header.Set("X-User", "ann@example.org")
	rt.ServeHTTP(w, r)
	if w.Code != 200 || w.Body.String() != "GET y ann@example.org " {
		t.Errorf("with identity: %d %q", w.Code, w.Body.String())
	}
}

func TestMountPluginError(t *testing.T) {
	bad := PluginFunc(func(context.Context, Host) ([]Route, error) { return nil, errors.New("no routes today") })
	_, err := (&Mount{Host: &SettingsMap{}}).Routes(context.Background(), []Entry{{Name: "bad", Plugin: bad}})
	if err == nil || !strings.Contains(err.Error(), "bad: no routes today") {
		t.Fatalf("%v", err)
	}
}

func TestSettingsReadOnly(t *testing.T) {
	s := NewSettings(map[string]string{SettingHidden: "/state/reso.db", "directory": "."}, SettingHidden)
	if err := s.SetSetting(t.Context(), SettingHidden, ""); err == nil {
		t.Error("a read-only setting was changed")
	}
	if v, _ := s.Setting(t.Context(), SettingHidden); v != "/state/reso.db" {
		t.Errorf("hidden = %q", v)
	}
	if err := s.SetSetting(t.Context(), "directory", "/tmp"); err != nil {
		t.Errorf("a writable setting: %v", err)
	}
}

package core

import (
	"net/http/httptest"
	"testing"
)

type bindUser struct {
	Name    string         `json:"name"`
	Age     int            `json:"age"`
	Boss    *bindUser      `json:"boss"`
	Tags    []string       `json:"tags"`
	Extra   map[string]any `json:"extra"`
	private string
}

func TestBind(t *testing.T) {
	data := map[string]any{
		"users": []any{
			Record{{Name: "username", Value: "ann"}, {Name: "email", Value: "ann@example.org"}, {Name: "n", Value: 3}},
			&bindUser{Name: "bo", Age: 4, Tags: []string{"a"}, Extra: map[string]any{"k": "v", "n": nil}},
		},
		"title": "T",
		"none":  nil,
	}
	rt, err := NewRouter([]Route{{Match: "GET,PUT /obj", Handler: HTTP(Bind(data))}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, target string
		code           int
		body           string
	}{
		{"GET", "/obj", 200, `{"result": {"none": "/obj/none", "title": "T", "users": "/obj/users"}}`},
		{"GET", "/obj/users", 200, `{"result": [{"url": "/obj/users/0"}, {"url": "/obj/users/1"}]}`},
		{"GET", "/obj/users/", 200, `{"result": [{"url": "/obj/users/0"}, {"url": "/obj/users/1"}]}`},
		{"GET", "/obj/users/0", 200, `{"result": {"username": "ann", "email": "ann@example.org", "n": "/obj/users/0/n"}}`},
		{"GET", "/obj/users/0/n", 200, `{"result": 3}`},
		{"GET", "/obj/users/1/name", 200, `{"result": "bo"}`},
		{"GET", "/obj/users/1/tags", 200, `{"result": [{"url": "/obj/users/1/tags/0"}]}`},
		{"GET", "/obj/users/1/extra", 200, `{"result": {"k": "v", "n": "/obj/users/1/extra/n"}}`},
		{"GET", "/obj/users/1/boss", 200, `{"result": null}`},
		{"GET", "/obj/users/1/boss/name", 404, "404 Object Not Found\n"},
		{"GET", "/obj/none/x/y", 404, "404 Object Not Found\n"},
		{"GET", "/obj/users/1/extra/n/x", 404, "404 Object Not Found\n"},
		{"GET", "/obj/users/1/private", 400, "400 Invalid Scope\n"},
		{"GET", "/obj/users/1/Nope", 400, "400 Invalid Scope\n"},
		{"GET", "/obj/users/2", 400, "400 Invalid Scope\n"},
		{"GET", "/obj/users/01", 400, "400 Invalid Scope\n"},
		{"GET", "/obj/users/-1", 400, "400 Invalid Scope\n"},
		{"GET", "/obj/missing", 400, "400 Invalid Scope\n"},
		{"GET", "/obj/title/x", 400, "400 Invalid Scope\n"},
		{"PUT", "/obj", 405, "405 Method Not Allowed\n"},
	}
	for _, c := range cases {
		t.Run(c.method+c.target, func(t *testing.T) {
			w := httptest.NewRecorder()
			rt.ServeHTTP(w, httptest.NewRequest(c.method, c.target, nil))
			if w.Code != c.code || w.Body.String() != c.body {
				t.Errorf("%d %s\nwant %d %s", w.Code, w.Body.String(), c.code, c.body)
			}
		})
	}
	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/obj/users/0", nil)
	rt2, _ := NewRouter([]Route{{Match: "GET /xml/(?P<p>.*)", Rewrite: "GET /%(p)s", Assign: []string{"ACCEPT=text/xml"}}, {Match: "GET /obj", Handler: HTTP(Bind(data))}})
	req = httptest.NewRequest("GET", "/xml/obj/users", nil)
	rt2.ServeHTTP(w, req)
	if got := w.Body.String(); got != "<result><url>/obj/users/0</url><url>/obj/users/1</url></result>" {
		t.Errorf("xml %q", got)
	}
}

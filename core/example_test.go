package core_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"

	"github.com/reso-project/reso/core"
)

type greeting struct{}

func (greeting) Get(_ context.Context, req *core.Request) (any, error) {
	if req.Path == "" {
		return nil, core.Status(400, "Missing Name")
	}
	return core.Node{Name: "hello", Content: core.Record{{Name: "name", Value: req.Path}}}, nil
}

// An ordered route table: a prefix that only rewrites and sets ACCEPT, then a
// resource.
func ExampleNewRouter() {
	rt, err := core.NewRouter([]core.Route{
		{Match: "GET /xml/(?P<path>.*)", Rewrite: "GET /%(path)s", Assign: []string{"ACCEPT=text/xml"}},
		{Match: "GET /hello/", Handler: core.HTTP(core.Resource(greeting{}))},
	})
	if err != nil {
		panic(err)
	}
	for _, target := range []string{"/hello/ann", "/xml/hello/bo", "/hello/", "/bye"} {
		w := httptest.NewRecorder()
		rt.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		body, _ := io.ReadAll(w.Body)
		fmt.Printf("%d %s %q\n", w.Code, w.Header().Get("Content-Type"), firstLine(body))
	}
	// Output:
	// 200 application/json "{\"hello\": {\"name\": \"ann\"}}"
	// 200 text/xml "<hello><name>bo</name></hello>"
	// 400 text/plain "400 Missing Name"
	// 404 text/plain "404 Not Found"
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}

// A bound object: lists answer urls, records their text fields.
func ExampleBind() {
	users := core.List{
		core.Record{{Name: "username", Value: "ann"}, {Name: "roles", Value: core.List{"admin"}}},
	}
	rt, _ := core.NewRouter([]core.Route{{Match: "GET /users", Handler: core.HTTP(core.Bind(users))}})
	for _, target := range []string{"/users", "/users/0", "/users/0/roles/0", "/users/3"} {
		w := httptest.NewRecorder()
		rt.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		fmt.Println(w.Code, w.Body.String())
	}
	// Output:
	// 200 {"result": [{"url": "/users/0"}]}
	// 200 {"result": {"username": "ann", "roles": "/users/0/roles"}}
	// 200 {"result": "admin"}
	// 400 400 Invalid Scope
}

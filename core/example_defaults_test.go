package core_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/reso-project/reso/core"
)

// A router answers a request that no route takes with the status line
// alone; WithRouteList adds the route forms, as the example application
// does.
func ExampleWithRouteList() {
	routes := []core.Route{{Match: "GET /a", Handler: http.NotFoundHandler()}}
	quiet, _ := core.NewRouter(routes)
	listing, _ := core.NewRouter(routes, core.WithRouteList())
	for _, rt := range []*core.Router{quiet, listing} {
		w := httptest.NewRecorder()
		rt.ServeHTTP(w, httptest.NewRequest("GET", "/b", nil))
		fmt.Printf("%q\n", w.Body.String())
	}
	// Output:
	// "404 Not Found\n"
	// "404 Not Found\nGET /a\n"
}

// WriteError keeps the text of an unexpected error out of the 500 answer
// unless the request went through ShowErrors.
func ExampleShowErrors() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		core.WriteError(w, r, errors.New("open /srv/secret.db: permission denied"))
	})
	for _, handler := range []http.Handler{h, core.ShowErrors(h)} {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		fmt.Printf("%d %q\n", w.Code, w.Body.String())
	}
	// Output:
	// 500 "500 Internal Server Error\n"
	// 500 "open /srv/secret.db: permission denied"
}

// Status errors compare by code and reason, so errors.Is recognizes a
// common status error however it was made.
func ExampleStatus() {
	err := fmt.Errorf("users: %w", core.Status(404, "Object Not Found"))
	fmt.Println(errors.Is(err, core.ErrObjectNotFound), errors.Is(err, core.ErrNotFound))
	se, _ := core.AsStatus(err)
	fmt.Println(se.Code(), se.Reason())
	// Output:
	// true false
	// 404 Object Not Found
}

// DecodeJSON keeps the order of object fields, so a value renders back as
// it was sent.
func ExampleDecodeJSON() {
	v, err := core.DecodeJSON([]byte(`{"z": 1, "a": [2.5, "K\u00f6ln"], "z": true}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(core.AppendJSON(nil, v)))
	fmt.Print(string(core.AppendText(nil, v)))
	// Output:
	// {"z": true, "a": [2.5, "K\u00f6ln"]}
	// z: true
	// a:
	//   - 2.5
	//   - Köln
}

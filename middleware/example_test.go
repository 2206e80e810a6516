package middleware_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/justinas/alice"

	"github.com/reso-project/reso/middleware"
)

// A chain that any net/http server can use: panics become 500 answers and
// cookies the client already has are not sent again.
func Example() {
	h := alice.New(middleware.Recover, middleware.Cookies).ThenFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "theme", Value: "dark"})
		if r.URL.Path == "/panic" {
			panic("oops")
		}
		io.WriteString(w, "hello")
	})
	for _, p := range []string{"/", "/panic"} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", p, nil)
		r.Header.Set("Cookie", "theme=dark")
		h.ServeHTTP(w, r)
		fmt.Println(p, w.Code, len(w.Header().Values("Set-Cookie")))
	}
	// Output:
	// / 200 0
	// /panic 500 0
}

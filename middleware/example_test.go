package middleware_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/justinas/alice"

	"github.com/reso-project/reso/core"
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

// An access log line per request, with the route that answered. The time
// and the duration are left out here to keep the output stable.
func ExampleLog() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{}
			}
			return a
		},
	}))
	router, err := core.NewRouter([]core.Route{
		{Match: "GET /hello", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "hello")
		})},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := middleware.Log(logger)(router)
	r := httptest.NewRequest("GET", "/hello?name=x", nil) // from 192.0.2.1:1234
	h.ServeHTTP(httptest.NewRecorder(), r)
	// Output:
	// level=INFO msg=request method=GET path=/hello status=200 bytes=5 query="name=x" remote=192.0.2.1:1234 route="GET /hello"
}

// Recover answers a panic with a bare 500; the stack trace goes into the
// body only under core.ShowErrors, as in reso's own server.
func ExampleRecover() {
	boom := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("oops") })
	for _, h := range []http.Handler{
		middleware.Recover(boom),
		core.ShowErrors(middleware.Recover(boom)),
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		first, _, _ := strings.Cut(w.Body.String(), "\n")
		fmt.Println(w.Code, first)
	}
	// Output:
	// 500 500 Internal Server Error
	// 500 panic: oops
}

// counter is a Recorder that prints what it is told.
type counter struct{ inFlight int }

func (c *counter) Start() { c.inFlight++ }
func (c *counter) Done(o middleware.Observation) {
	c.inFlight--
	fmt.Println(o.Method, o.Route, o.Status, o.Bytes, "in flight:", c.inFlight)
}

// Metrics reports each request to a Recorder: the route pattern that
// answered (never the raw path), the status and the bytes written.
func ExampleMetrics() {
	router, err := core.NewRouter([]core.Route{{Match: "GET /hello", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "hello")
	})}})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := middleware.Metrics(&counter{})(router)
	for _, p := range []string{"/hello?x=1", "/nothing"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	// Output:
	// GET GET /hello 200 5 in flight: 0
	// GET  404 14 in flight: 0
}

// Cookies drops a Set-Cookie that would tell the client what it already
// has.
func ExampleCookies() {
	h := middleware.Cookies(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "theme", Value: "dark"})
		io.WriteString(w, "ok")
	}))
	for _, sent := range []string{"theme=dark", "theme=light"} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Cookie", sent)
		h.ServeHTTP(w, r)
		fmt.Printf("%s: %q\n", sent, w.Header().Values("Set-Cookie"))
	}
	// Output:
	// theme=dark: []
	// theme=light: ["theme=dark"]
}
